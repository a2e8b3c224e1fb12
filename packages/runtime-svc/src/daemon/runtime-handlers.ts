import { status } from '@grpc/grpc-js';
import { StatusError, type RuntimeServiceConfig } from '@skiff/common';
import { Runc } from '../oci/runc.js';
import type { RuntimePaths } from './paths.js';

/** A RuntimeClass handler and the runc-compatible runtime behind it. */
export interface RuntimeHandler {
  /** "" for the default handler (also reachable as "runc"). */
  name: string;
  runc: Runc;
}

/** The default runtime under "" and "runc", plus the named handlers of the configuration. */
export class RuntimeHandlers {
  private readonly byName = new Map<string, RuntimeHandler>();
  readonly default: RuntimeHandler;

  constructor(
    private readonly config: RuntimeServiceConfig,
    private readonly paths: RuntimePaths,
    private readonly systemdCgroup: boolean,
  ) {
    this.default = { name: '', runc: new Runc({ binary: config.runc, root: paths.runcRoot(''), systemdCgroup }) };
    this.byName.set('', this.default);
    this.byName.set('runc', this.default);
    for (const h of config.handlers) {
      this.byName.set(h.name, { name: h.name, runc: new Runc({ binary: h.runtime_path, root: paths.runcRoot(h.name), systemdCgroup }) });
    }
  }

  /** Names announced in StatusResponse: the default ("") and every configured one. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  all(): RuntimeHandler[] {
    return [...new Set(this.byName.values())];
  }

  resolve(name: string): RuntimeHandler {
    const handler = this.byName.get(name);
    if (!handler) {
      const known = this.names().filter(Boolean).join(', ');
      throw new StatusError(status.NOT_FOUND, `runtime handler "${name}" is not configured; this node offers: ${known} (and "" for the default)`);
    }
    return handler;
  }

  /**
   * The runtime that manages an existing sandbox or container. A handler removed from the
   * configuration since still needs its containers stopped and deleted: its state directory is
   * known, and the default binary speaks the same command line.
   */
  forExisting(name: string): RuntimeHandler {
    return (
      this.byName.get(name) ?? {
        name,
        runc: new Runc({ binary: this.config.runc, root: this.paths.runcRoot(name), systemdCgroup: this.systemdCgroup }),
      }
    );
  }
}

import { status } from '@grpc/grpc-js';
import { StatusError, type RuntimeBinary, type RuntimeHandlerKind, type RuntimeServiceConfig } from '@skiff/common';
import { Runc } from '../oci/runc.js';
import type { RuntimePaths } from './paths.js';

/** What a handler's runtime can honour, as StatusResponse announces it. */
export interface HandlerFeatures {
  userNamespaces: boolean;
  recursiveReadOnlyMounts: boolean;
}

/** A RuntimeClass handler and the runc-compatible runtime behind it. */
export interface RuntimeHandler {
  /** "" for the default handler (also reachable as "runc"). */
  name: string;
  kind: RuntimeHandlerKind;
  runc: Runc;
}

/**
 * runsc's own kernel implements neither id-mapped mounts nor mount_setattr, so a sandbox-kind
 * handler offers neither user namespaces nor recursive read-only mounts.
 */
export function featuresOf(kind: RuntimeHandlerKind): HandlerFeatures {
  return kind === 'oci' ? { userNamespaces: true, recursiveReadOnlyMounts: true } : { userNamespaces: false, recursiveReadOnlyMounts: false };
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
    this.default = { name: '', kind: 'oci', runc: new Runc({ binary: config.runc, root: paths.runcRoot(''), systemdCgroup }) };
    this.byName.set('', this.default);
    this.byName.set('runc', this.default);
    for (const h of config.handlers) {
      const runc = new Runc({ binary: h.runtime_path, root: h.runtime_root || paths.runcRoot(h.name), systemdCgroup, extraArgs: h.runtime_args });
      this.byName.set(h.name, { name: h.name, kind: h.kind, runc });
    }
  }

  /** Names announced in StatusResponse: the default ("") and every configured one. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /** Each name with its handler (the default appears as "" and "runc"). */
  entries(): [string, RuntimeHandler][] {
    return [...this.byName.entries()];
  }

  all(): RuntimeHandler[] {
    return [...new Set(this.byName.values())];
  }

  resolve(name: string): RuntimeHandler {
    const handler = this.byName.get(name);
    if (!handler) {
      const known = this.names().filter(Boolean).join(', ');
      throw new StatusError(status.INVALID_ARGUMENT, `runtime handler "${name}" is not configured; this node offers: ${known} (and "" for the default)`);
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
        kind: 'oci',
        runc: new Runc({ binary: this.config.runc, root: this.paths.runcRoot(name), systemdCgroup: this.systemdCgroup }),
      }
    );
  }
}

/** A handler's runtime as conmon and stream-svc run it: the same binary, root and flags as its Runc. */
export function runtimeForConmon(handler: RuntimeHandler): RuntimeBinary {
  return { ...handler.runc.binaryForConmon, kind: handler.kind };
}

/** The handler `name` names when it is a sandbox-kind one (runsc); the default ("", "runc") never is. */
export function sandboxHandler(handlers: RuntimeHandlers, name: string): RuntimeHandler | undefined {
  if (name === '' || name === 'runc') return undefined;
  const handler = handlers.forExisting(name);
  return handler.kind === 'sandbox' ? handler : undefined;
}

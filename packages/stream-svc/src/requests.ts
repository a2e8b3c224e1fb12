/** The runtime a command is executed through (as runc's command line). */
export interface RuntimeBinary {
  path: string;
  /** runc --root */
  root: string;
  /** Further global arguments (e.g. --systemd-cgroup). */
  args: string[];
}

interface StreamFlags {
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** A CRI Exec request, resolved by the runtime service to what running it takes. */
export interface ExecStreamRequest extends StreamFlags {
  kind: 'exec';
  containerId: string;
  cmd: string[];
  runtime: RuntimeBinary;
  /** The container's OCI process (user, env, cwd, capabilities...); args and terminal are replaced. */
  process: Record<string, unknown>;
  /** conmon, which runs an exec with a terminal (default /usr/bin/conmon). */
  conmonPath?: string;
}

/**
 * A CRI Attach request: conmon's attach socket and control fifo of the container. `tty` is the
 * container's own; `stdin` is only set when the container keeps a stdin open.
 */
export interface AttachStreamRequest extends StreamFlags {
  kind: 'attach';
  containerId: string;
  attachSocket: string;
  ctlFile: string;
}

/** A CRI PortForward request: the sandbox's network namespace. */
export interface PortForwardStreamRequest {
  kind: 'portforward';
  podSandboxId: string;
  netnsPath: string;
  /** Ports named in the request; empty means the client chooses per stream. */
  ports: number[];
}

export type StreamRequest = ExecStreamRequest | AttachStreamRequest | PortForwardStreamRequest;

export class InvalidStreamRequest extends Error {}

function bool(v: unknown, name: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new InvalidStreamRequest(`${name} must be a boolean`);
  return v;
}

function str(v: unknown, name: string): string {
  if (typeof v !== 'string' || v === '') throw new InvalidStreamRequest(`${name} is required`);
  return v;
}

function flags(o: Record<string, unknown>, call: string): StreamFlags {
  const f = { tty: bool(o['tty'], 'tty'), stdin: bool(o['stdin'], 'stdin'), stdout: bool(o['stdout'], 'stdout'), stderr: bool(o['stderr'], 'stderr') };
  // The kubelet's rules: a terminal merges stderr into stdout, and a stream with nothing to carry is useless.
  if (f.tty && f.stderr) throw new InvalidStreamRequest(`${call}: tty and stderr cannot both be true`);
  if (!f.stdin && !f.stdout && !f.stderr) throw new InvalidStreamRequest(`${call}: one of stdin, stdout or stderr must be set`);
  return f;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks a request body received on the internal socket. */
export function parseStreamRequest(body: unknown): StreamRequest {
  if (!isObject(body)) throw new InvalidStreamRequest('request body must be a JSON object');
  switch (body['kind']) {
    case 'exec': {
      const containerId = str(body['containerId'], 'Exec: container_id');
      const cmd = body['cmd'];
      if (!Array.isArray(cmd) || cmd.length === 0 || !cmd.every((a) => typeof a === 'string')) throw new InvalidStreamRequest('Exec: cmd is required');
      const runtime = body['runtime'];
      if (!isObject(runtime) || typeof runtime['path'] !== 'string' || typeof runtime['root'] !== 'string' || !Array.isArray(runtime['args'])) {
        throw new InvalidStreamRequest('Exec: runtime must name path, root and args');
      }
      const proc = body['process'];
      if (!isObject(proc)) throw new InvalidStreamRequest('Exec: process must be the container\'s OCI process');
      const conmonPath = body['conmonPath'];
      if (conmonPath !== undefined && (typeof conmonPath !== 'string' || !conmonPath.startsWith('/'))) {
        throw new InvalidStreamRequest('Exec: conmonPath must be an absolute path');
      }
      return {
        kind: 'exec',
        containerId,
        cmd: cmd as string[],
        runtime: { path: runtime['path'], root: runtime['root'], args: (runtime['args'] as unknown[]).map(String) },
        process: proc,
        ...(conmonPath !== undefined ? { conmonPath } : {}),
        ...flags(body, 'Exec'),
      };
    }
    case 'attach':
      return {
        kind: 'attach',
        containerId: str(body['containerId'], 'Attach: container_id'),
        attachSocket: str(body['attachSocket'], 'Attach: attachSocket'),
        ctlFile: str(body['ctlFile'], 'Attach: ctlFile'),
        ...flags(body, 'Attach'),
      };
    case 'portforward': {
      const ports = body['ports'] ?? [];
      if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536)) {
        throw new InvalidStreamRequest('PortForward: ports must be TCP port numbers (1-65535)');
      }
      return { kind: 'portforward', podSandboxId: str(body['podSandboxId'], 'PortForward: pod_sandbox_id'), netnsPath: str(body['netnsPath'], 'PortForward: network namespace'), ports: ports as number[] };
    }
    default:
      throw new InvalidStreamRequest(`kind must be exec, attach or portforward, got ${JSON.stringify(body['kind'])}`);
  }
}

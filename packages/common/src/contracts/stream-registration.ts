/**
 * The contract between runtime-svc (sender) and stream-svc (receiver): runtime-svc resolves a CRI
 * Exec, Attach or PortForward request to what serving it takes and registers it on stream-svc's
 * root-only internal socket; stream-svc answers with the single-use URL the client opens.
 *
 *   POST STREAM_REGISTRATION_PATH  StreamRequest  ->  201 StreamRegistered
 *                                                 ->  400 ErrorAnswer (the request breaks this contract)
 *                                                 ->  429 ErrorAnswer (too many requests are waiting)
 *
 * An Exec carries the runtime of the container's RuntimeClass handler as runtime-svc resolved it
 * (the handlers a reload added or changed included), so stream-svc keeps no table of handlers of
 * its own; it runs the conmon of its own configuration. Only root can reach the socket.
 */
import type { RuntimeBinary } from '../runtime-binary.js';
import { ContractViolation, isObject, rejectUnknownFields } from './contract-error.js';
import { absolutePath, optionalBool as bool, requiredString as str, strings } from './contract-fields.js';
import { parseOciProcess, type OciProcess } from './oci-process.js';

export const STREAM_REGISTRATION_PATH = '/v1/streams';

export interface StreamFlags {
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
  /** The runtime that manages the container, with its global arguments. */
  runtime: RuntimeBinary;
  /** The container's OCI process (user, env, cwd, capabilities...); args and terminal are replaced. */
  process: OciProcess;
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

/** A CRI PortForward request: the sandbox's network namespace, or none for a pod on the host's network. */
export interface PortForwardStreamRequest {
  kind: 'portforward';
  podSandboxId: string;
  /** Absolute; '' when hostNetwork. */
  netnsPath: string;
  /** The pod shares the runtime's network namespace: its ports are dialled from stream-svc's own. */
  hostNetwork: boolean;
  /** Ports named in the request; empty means the client chooses per stream. */
  ports: number[];
}

export type StreamRequest = ExecStreamRequest | AttachStreamRequest | PortForwardStreamRequest;

/** The 201 answer. */
export interface StreamRegistered {
  url: string;
}

const FLAG_FIELDS = ['tty', 'stdin', 'stdout', 'stderr'] as const;

function flags(o: Record<string, unknown>, call: string): StreamFlags {
  const f = { tty: bool(o['tty'], 'tty'), stdin: bool(o['stdin'], 'stdin'), stdout: bool(o['stdout'], 'stdout'), stderr: bool(o['stderr'], 'stderr') };
  // The kubelet's rules: a terminal merges stderr into stdout, and a stream with nothing to carry is useless.
  if (f.tty && f.stderr) throw new ContractViolation(`${call}: tty and stderr`, 'cannot both be true');
  if (!f.stdin && !f.stdout && !f.stderr) throw new ContractViolation(`${call}: one of stdin, stdout or stderr`, 'must be set');
  return f;
}

function execRuntime(v: unknown): RuntimeBinary {
  if (!isObject(v)) throw new ContractViolation('Exec: runtime', 'must name path, root, args and kind');
  rejectUnknownFields(v, ['path', 'root', 'args', 'kind'], 'Exec: runtime.');
  const kind = v['kind'];
  if (kind !== 'oci' && kind !== 'sandbox') throw new ContractViolation('Exec: runtime.kind', `must be "oci" or "sandbox", got ${JSON.stringify(kind)}`);
  return {
    path: absolutePath(v['path'], 'Exec: runtime.path'),
    root: absolutePath(v['root'], 'Exec: runtime.root'),
    args: strings(v['args'] ?? [], 'Exec: runtime.args', false),
    kind,
  };
}

/** Checks a registration received on stream-svc's internal socket; a violation names the field. */
export function parseStreamRequest(body: unknown): StreamRequest {
  if (!isObject(body)) throw new ContractViolation('request body', 'must be a JSON object');
  switch (body['kind']) {
    case 'exec': {
      rejectUnknownFields(body, ['kind', 'containerId', 'cmd', 'runtime', 'process', ...FLAG_FIELDS], 'Exec: ');
      const containerId = str(body['containerId'], 'Exec: container_id');
      const cmd = strings(body['cmd'], 'Exec: cmd', true);
      const runtime = execRuntime(body['runtime']);
      const process = parseOciProcess(body['process'], 'Exec: process');
      return { kind: 'exec', containerId, cmd, runtime, process, ...flags(body, 'Exec') };
    }
    case 'attach':
      rejectUnknownFields(body, ['kind', 'containerId', 'attachSocket', 'ctlFile', ...FLAG_FIELDS], 'Attach: ');
      return {
        kind: 'attach',
        containerId: str(body['containerId'], 'Attach: container_id'),
        attachSocket: absolutePath(body['attachSocket'], 'Attach: attachSocket'),
        ctlFile: absolutePath(body['ctlFile'], 'Attach: ctlFile'),
        ...flags(body, 'Attach'),
      };
    case 'portforward': {
      rejectUnknownFields(body, ['kind', 'podSandboxId', 'netnsPath', 'hostNetwork', 'ports'], 'PortForward: ');
      const ports = body['ports'] ?? [];
      if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536)) {
        throw new ContractViolation('PortForward: ports', 'must be TCP port numbers (1-65535)');
      }
      const hostNetwork = body['hostNetwork'] ?? false;
      if (typeof hostNetwork !== 'boolean') throw new ContractViolation('PortForward: hostNetwork', 'must be a boolean');
      if (hostNetwork && body['netnsPath'] !== '') throw new ContractViolation('PortForward: netnsPath', 'must be empty for a pod on the host network');
      return {
        kind: 'portforward',
        podSandboxId: str(body['podSandboxId'], 'PortForward: pod_sandbox_id'),
        netnsPath: hostNetwork ? '' : absolutePath(body['netnsPath'], 'PortForward: netnsPath'),
        hostNetwork,
        ports: ports as number[],
      };
    }
    default:
      throw new ContractViolation('kind', `must be exec, attach or portforward, got ${JSON.stringify(body['kind'])}`);
  }
}

import { promises as fs } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { StatusError, STREAM_REGISTRATION_PATH, type ErrorAnswer, type StreamRegistered, type StreamRequest } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { refreshContainer } from '../container/container-state.js';
import { containerState } from '../container/container-view.js';
import { requireContainer } from '../container/require-container.js';
import type { RuntimeContext } from '../daemon/context.js';
import type { Spec } from '../oci/runtime-spec.js';

const REGISTER_TIMEOUT_MS = 10_000;

/** HTTP answers of the streaming service's internal socket → gRPC status. */
const STATUS_BY_HTTP: Record<number, status> = { 400: status.INVALID_ARGUMENT, 429: status.RESOURCE_EXHAUSTED };

/** Hands a resolved request to stream-svc on its root-only socket; answers the URL the client opens. */
function registerStream(socket: string, call: string, body: StreamRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(
      { socketPath: socket, path: STREAM_REGISTRATION_PATH, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }, agent: false, timeout: REGISTER_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let answer: Partial<StreamRegistered & ErrorAnswer> = {};
          try {
            answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof answer;
          } catch {
            // reported below with the status code
          }
          if (res.statusCode === 201 && answer.url) return resolve(answer.url);
          const code = STATUS_BY_HTTP[res.statusCode ?? 0] ?? status.UNKNOWN;
          reject(new StatusError(code, `${call}: ${answer.message ?? `stream-svc answered HTTP ${res.statusCode}`}`));
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (err: NodeJS.ErrnoException) => {
      const down = err.code === 'ENOENT' || err.code === 'ECONNREFUSED';
      reject(
        new StatusError(
          status.UNAVAILABLE,
          down
            ? `${call}: stream-svc is not running (nothing listens on ${socket}); start it (skiff up runs it) and retry`
            : `${call}: stream-svc on ${socket} did not answer: ${err.message}`,
        ),
      );
    });
    req.end(payload);
  });
}

async function runningContainer(ctx: RuntimeContext, call: string, id: string) {
  const rec = await refreshContainer(ctx, requireContainer(ctx, call, id));
  if (rec.phase !== 'running') {
    throw new StatusError(status.FAILED_PRECONDITION, `${call}: container ${rec.id} is ${containerState(rec)}; it must be running`);
  }
  return rec;
}

export async function execCall(ctx: RuntimeContext, req: cri.ExecRequest__Output): Promise<cri.ExecResponse> {
  const rec = await runningContainer(ctx, 'Exec', req.container_id);
  if (req.cmd.length === 0) throw new StatusError(status.INVALID_ARGUMENT, 'Exec: cmd is required');
  const spec = JSON.parse(await fs.readFile(ctx.paths.container(rec.id).spec, 'utf8')) as Spec;
  // stream-svc runs the runtime its own configuration names for the handler, and its own conmon.
  const { root, args } = ctx.handlers.forExisting(rec.runtimeHandler).runc.binaryForConmon;
  const url = await registerStream(ctx.config.stream.internal_socket, 'Exec', {
    kind: 'exec',
    containerId: rec.id,
    cmd: [...req.cmd],
    runtime: { handler: rec.runtimeHandler, root, args },
    process: { ...spec.process },
    tty: req.tty,
    stdin: req.stdin,
    stdout: req.stdout,
    stderr: req.stderr,
  });
  return { url };
}

/**
 * Attach goes to the container's conmon. What the stream can carry is the container's: a terminal
 * merges stderr into stdout, and stdin exists only if the container was created with one.
 */
export async function attachCall(ctx: RuntimeContext, req: cri.AttachRequest__Output): Promise<cri.AttachResponse> {
  const rec = await runningContainer(ctx, 'Attach', req.container_id);
  if (req.stdin && !rec.stdin) {
    throw new StatusError(status.FAILED_PRECONDITION, `Attach: container ${rec.id} was not created with stdin open (stdin: true), so there is no stdin to attach to`);
  }
  const url = await registerStream(ctx.config.stream.internal_socket, 'Attach', {
    kind: 'attach',
    containerId: rec.id,
    attachSocket: join(ctx.paths.attachDir, rec.id, 'attach'),
    ctlFile: join(ctx.paths.container(rec.id).bundle, 'ctl'),
    tty: rec.tty,
    stdin: req.stdin,
    stdout: req.stdout,
    stderr: req.stderr && !rec.tty,
  });
  return { url };
}

export async function portForwardCall(ctx: RuntimeContext, req: cri.PortForwardRequest__Output): Promise<cri.PortForwardResponse> {
  if (!req.pod_sandbox_id) throw new StatusError(status.INVALID_ARGUMENT, 'PortForward: pod_sandbox_id is required');
  const rec = ctx.state.findSandbox(req.pod_sandbox_id);
  if (!rec) throw new StatusError(status.NOT_FOUND, `PortForward: pod sandbox ${req.pod_sandbox_id} does not exist`);
  if (rec.phase !== 'ready') throw new StatusError(status.FAILED_PRECONDITION, `PortForward: pod sandbox ${rec.id} is not ready`);
  const url = await registerStream(ctx.config.stream.internal_socket, 'PortForward', {
    kind: 'portforward',
    podSandboxId: rec.id,
    // A pod on the host network is reached in the host's namespace.
    netnsPath: rec.netnsPath ?? '/proc/1/ns/net',
    ports: [...req.port],
  });
  return { url };
}

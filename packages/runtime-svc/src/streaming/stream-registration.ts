import { request as httpRequest } from 'node:http';
import { status } from '@grpc/grpc-js';
import { StatusError, STREAM_REGISTRATION_PATH, type ErrorAnswer, type StreamRegistered, type StreamRequest } from '@skiff/common';

const REGISTER_TIMEOUT_MS = 10_000;

/** HTTP answers of the streaming service's internal socket → gRPC status. */
const STATUS_BY_HTTP: Record<number, status> = { 400: status.INVALID_ARGUMENT, 429: status.RESOURCE_EXHAUSTED };

/** Hands a resolved request to stream-svc on its root-only socket; answers the URL the client opens. */
export function registerStream(socket: string, call: string, body: StreamRequest): Promise<string> {
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

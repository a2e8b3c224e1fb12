import { status } from '@grpc/grpc-js';
import { httpCall, jsonBody, nobodyListens, StatusError, STREAM_REGISTRATION_PATH, type ErrorAnswer, type StreamRegistered, type StreamRequest } from '@skiff/common';

const REGISTER_TIMEOUT_MS = 10_000;

/** HTTP answers of the streaming service's internal socket → gRPC status. */
const STATUS_BY_HTTP: Record<number, status> = { 400: status.INVALID_ARGUMENT, 429: status.RESOURCE_EXHAUSTED };

/** Hands a resolved request to stream-svc on its root-only socket; answers the URL the client opens. */
export async function registerStream(socket: string, call: string, body: StreamRequest): Promise<string> {
  let answer;
  try {
    answer = await httpCall({ socketPath: socket, path: STREAM_REGISTRATION_PATH }, { method: 'POST', body, timeoutMs: REGISTER_TIMEOUT_MS, timeoutMessage: 'no answer within 10 s' });
  } catch (err) {
    throw new StatusError(
      status.UNAVAILABLE,
      nobodyListens(err)
        ? `${call}: stream-svc is not running (nothing listens on ${socket}); start it (skiff up runs it) and retry`
        : `${call}: stream-svc on ${socket} did not answer: ${(err as Error).message}`,
    );
  }
  const registered = jsonBody<StreamRegistered & ErrorAnswer>(answer) ?? {};
  if (answer.status === 201 && registered.url) return registered.url;
  const code = STATUS_BY_HTTP[answer.status] ?? status.UNKNOWN;
  throw new StatusError(code, `${call}: ${registered.message ?? `stream-svc answered HTTP ${answer.status}`}`);
}

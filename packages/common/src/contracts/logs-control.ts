/**
 * The contract between runtime-svc (sender) and logs-svc (receiver) on logs-svc's root-only
 * internal socket. Every answer without content is 204; failures carry an ErrorAnswer. A log
 * path that runs through a symbolic link or names no regular file is 422 (track and reopen).
 *
 *   PUT    /v1/containers/:id         TrackContainerRequest  follow a container (its log file is created at once)
 *   DELETE /v1/containers/:id                                forget it
 *   POST   /v1/containers/:id/flush                          answers once every line it wrote is in its file
 *                                                            (404 unknown container, 503 not ready, 504 behind)
 *   POST   /v1/containers/:id/reopen                         switch to a new file at its log path (after a rename)
 *   GET    /v1/status                 -> 200 LogsStatus      readiness, cursor, journald rate-limit notices
 */
import { ContractViolation, isObject, rejectUnknownFields } from './contract-error.js';

export const LOGS_STATUS_PATH = '/v1/status';

/** The path of a container's resource, or of one of its actions. */
export function logsContainerPath(id: string, action?: 'flush' | 'reopen'): string {
  return `/v1/containers/${id}${action ? `/${action}` : ''}`;
}

export type LogsRoute =
  | { call: 'status' }
  | { call: 'track' | 'forget' | 'flush' | 'reopen'; containerId: string };

const CONTAINER_ROUTE = /^\/v1\/containers\/([0-9a-f]{8,128})(?:\/(flush|reopen))?$/;

/** Which call a request is: undefined for no such path, 'method' for a path that does not take the method. */
export function matchLogsRoute(method: string, url: string): LogsRoute | 'method' | undefined {
  if (url === LOGS_STATUS_PATH) return method === 'GET' ? { call: 'status' } : 'method';
  const m = CONTAINER_ROUTE.exec(url);
  if (!m) return undefined;
  const containerId = m[1]!;
  const action = m[2] as 'flush' | 'reopen' | undefined;
  if (action) return method === 'POST' ? { call: action, containerId } : 'method';
  if (method === 'PUT') return { call: 'track', containerId };
  if (method === 'DELETE') return { call: 'forget', containerId };
  return 'method';
}

/** Body of PUT /v1/containers/:id. */
export interface TrackContainerRequest {
  /** The container's CRI log file, absolute. */
  logPath: string;
  /**
   * The container may have written already (logs-svc did not follow it when it should have): its
   * output in the journal is read back into the file first, if the file is still empty.
   */
  readBack?: boolean;
}

export function parseTrackContainerRequest(body: unknown): TrackContainerRequest {
  if (!isObject(body)) throw new ContractViolation('request body', 'must be a JSON object');
  rejectUnknownFields(body, ['logPath', 'readBack']);
  const logPath = body['logPath'];
  if (typeof logPath !== 'string' || !logPath.startsWith('/')) throw new ContractViolation('logPath', 'must be an absolute path');
  const readBack = body['readBack'];
  if (readBack !== undefined && typeof readBack !== 'boolean') throw new ContractViolation('readBack', 'must be true or false');
  return { logPath, ...(readBack ? { readBack } : {}) };
}

/** The answer of GET /v1/status. */
export interface LogsStatus {
  ready: boolean;
  cursor?: string;
  containers: number;
  suppressed: { total: number; byContainer: Record<string, number>; last?: string };
  writeError?: { path: string; message: string };
  /** Why the state (the journal cursor and the files' sizes) cannot be saved, while it cannot; no line is read past it meanwhile. */
  stateError?: string;
  /** Entries naming a container that did not come from its conmon, dropped. */
  untrusted: { total: number; last?: string };
  /** Output of containers logs-svc did not follow when it came (none it had just forgotten), dropped; the last one's id. */
  unknown: { total: number; last?: string };
  memory: { rss: number; heapUsed: number; heapTotal: number; external: number };
}

import { status } from '@grpc/grpc-js';
import { httpCall, jsonBody, nobodyListens, logsContainerPath, openLogFile, StatusError, UnsafeLogPath, type ErrorAnswer, type TrackContainerRequest } from '@skiff/common';
import type { RuntimeContext } from '../daemon/context.js';

/** What logs-svc answered: its HTTP status, or that it could not be reached. */
type Answer = { code: number; message: string } | { down: true; restarting: boolean; message: string };

/** What logs-svc answered, as text for a log line or an error: its message, else its HTTP status. */
function describeAnswer(answer: Answer): string {
  return answer.message || ('code' in answer ? `HTTP ${answer.code}` : 'no answer');
}

async function callLogs(socket: string, method: 'PUT' | 'DELETE' | 'POST', path: string, timeoutMs: number, body?: TrackContainerRequest): Promise<Answer> {
  try {
    const answer = await httpCall({ socketPath: socket, path }, { method, body, timeoutMs });
    return { code: answer.status, message: jsonBody<ErrorAnswer>(answer)?.message ?? '' };
  } catch (err) {
    // A socket left behind with nobody listening is a logs-svc that was killed and is being
    // restarted; a missing socket is one that is not running at all.
    const restarting = (err as NodeJS.ErrnoException).code === 'ECONNREFUSED';
    return { down: true, restarting, message: nobodyListens(err) ? `logs-svc is not running (nothing listens on ${socket})` : `logs-svc on ${socket} did not answer: ${(err as Error).message}` };
  }
}

const TRACK_TIMEOUT_MS = 10_000;

/** Whether logs-svc follows the container, or the empty file was made here without it. */
export type TrackResult = 'tracked' | 'file made here';

/**
 * Tells logs-svc to follow a new container's output into its CRI log file, before conmon starts.
 * When logs-svc is down the (empty) file is made here, and CreateContainer does not fail: the
 * container is offered again once it is listed (retrackContainerLog), and a logs-svc that starts
 * later finds it in runtime-svc's list. No line is lost either way.
 */
export async function trackContainerLog(ctx: RuntimeContext, id: string, logPath: string): Promise<TrackResult> {
  const answer = await callLogs(ctx.config.logs.internal_socket, 'PUT', logsContainerPath(id), TRACK_TIMEOUT_MS, { logPath });
  if ('code' in answer && answer.code === 204) return 'tracked';
  if ('code' in answer && answer.code === 422) throw new StatusError(status.INVALID_ARGUMENT, `${describeAnswer(answer)}; remove it`);
  ctx.log.warn({ container: id, answer: describeAnswer(answer) }, 'logs-svc did not take the container; it will when it starts');
  await createLogFile(logPath);
  return 'file made here';
}

/**
 * Offers logs-svc, once more, a container it did not take at creation; called once runtime-svc
 * lists the container, before CreateContainer answers (so before any output). A logs-svc that
 * came back in between listens before it reads runtime-svc's list, and may have read it while the
 * container was still being made: it takes the container now. One that is still down reads the
 * list later and finds the container there.
 */
export async function retrackContainerLog(ctx: RuntimeContext, id: string, logPath: string): Promise<void> {
  const answer = await callLogs(ctx.config.logs.internal_socket, 'PUT', logsContainerPath(id), TRACK_TIMEOUT_MS, { logPath });
  if ('code' in answer && answer.code === 204) {
    ctx.log.info({ container: id }, 'logs-svc took the container once it was listed');
    return;
  }
  if (!('code' in answer)) {
    ctx.log.debug({ container: id, answer: answer.message }, 'logs-svc is still down; it will find the container in the list when it starts');
    return;
  }
  ctx.log.warn({ container: id, answer: describeAnswer(answer) }, 'logs-svc did not take the container when offered again; its output is not written to its log file');
}

/**
 * The empty log file and its directories, made as logs-svc makes them: never through a symbolic
 * link at any level, nor blocking on a FIFO someone put at its path.
 */
export async function createLogFile(logPath: string): Promise<void> {
  let handle;
  try {
    handle = await openLogFile(logPath);
  } catch (err) {
    if (err instanceof UnsafeLogPath) throw new StatusError(status.INVALID_ARGUMENT, `${err.message}; remove it`);
    throw err;
  }
  await handle.close();
}

/** Tells logs-svc a container is gone (best effort: at its start logs-svc drops what runtime-svc no longer lists). */
export async function forgetContainerLog(ctx: RuntimeContext, id: string): Promise<void> {
  const answer = await callLogs(ctx.config.logs.internal_socket, 'DELETE', logsContainerPath(id), TRACK_TIMEOUT_MS);
  if (!('code' in answer) || answer.code !== 204) ctx.log.warn({ container: id, answer: describeAnswer(answer) }, 'logs-svc was not told that the container was removed');
}

/**
 * How a flush went: done; not yet (logs-svc is behind the journal, starting, or being restarted
 * after a crash); or logs-svc is not running at all.
 */
export type FlushResult = 'flushed' | 'behind' | 'unavailable';

/**
 * Waits (bounded by logs-svc's flush_timeout) until every line an exited container wrote is in
 * its log file. A logs-svc that does not follow the container (404) has missed it somehow: it is
 * asked to follow it, reading its output back from the journal, and the flush is asked again. An
 * exit is never reported over a log that logs-svc did not write.
 */
export async function flushContainerLog(ctx: RuntimeContext, id: string, logPath: string): Promise<FlushResult> {
  let answer = await callFlush(ctx, id);
  if ('code' in answer && answer.code === 404 && stillLive(ctx, id)) {
    ctx.log.warn({ container: id }, 'logs-svc did not follow the container; asking it to read its output back from the journal');
    const tracked = await callLogs(ctx.config.logs.internal_socket, 'PUT', logsContainerPath(id), TRACK_TIMEOUT_MS, { logPath, readBack: true });
    answer = 'code' in tracked && tracked.code === 204 ? await callFlush(ctx, id) : tracked;
  }
  if ('code' in answer && answer.code === 204) return 'flushed';
  if ('code' in answer ? answer.code === 504 || answer.code === 503 : answer.restarting) return 'behind';
  ctx.log.warn({ container: id, answer: describeAnswer(answer) }, "the exited container's log may still be missing its last lines");
  return 'unavailable';
}

function callFlush(ctx: RuntimeContext, id: string): Promise<Answer> {
  return callLogs(ctx.config.logs.internal_socket, 'POST', logsContainerPath(id, 'flush'), 60_000);
}

/** Not being removed: a removal that told logs-svc to forget the container is not undone. */
function stillLive(ctx: RuntimeContext, id: string): boolean {
  const phase = ctx.state.containers.get(id)?.phase;
  return phase === 'created' || phase === 'running';
}

/** ReopenContainerLog through logs-svc: lines before it stay in the renamed file, later ones go to a new one. */
export async function reopenContainerLogFile(ctx: RuntimeContext, id: string): Promise<void> {
  const answer = await callLogs(ctx.config.logs.internal_socket, 'POST', logsContainerPath(id, 'reopen'), 40_000);
  if ('code' in answer && answer.code === 204) return;
  if (!('code' in answer)) throw new StatusError(status.UNAVAILABLE, `ReopenContainerLog: ${answer.message}; start it (skiff up runs it) and retry`);
  const code = answer.code === 404 || answer.code === 422 ? status.FAILED_PRECONDITION : answer.code === 503 || answer.code === 504 ? status.UNAVAILABLE : status.INTERNAL;
  throw new StatusError(code, `ReopenContainerLog: logs-svc answered: ${describeAnswer(answer)}`);
}

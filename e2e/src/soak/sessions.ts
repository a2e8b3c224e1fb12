/**
 * The two long-lived streaming sessions on the pod that lives through the soak, checked every few
 * seconds: `kubectl exec -i … cat` (a line written to it must come back) and `kubectl port-forward`
 * to its httpd (a GET through it must answer). A session may end only at the kill of stream-svc or
 * of the kubelet; any other end, or a session that stops answering with no such kill, is a problem.
 * An ended session is started again.
 *
 *   runExecSession(ctx, pod, signal): Promise<SessionStats>
 *   runPortForwardSession(ctx, pod, signal): Promise<SessionStats>
 *   interface SessionStats { name, checks, ends, explainedEnds }
 */
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { sleep, since } from './clock.js';
import type { SoakContext } from './context.js';
import { STREAM_CARRIERS } from './kills.js';
import { containerName, HTTP_PORT } from './manifests.js';

export interface SessionStats {
  name: string;
  /** Checks that passed. */
  checks: number;
  ends: number;
  /** Ends a kill of stream-svc or the kubelet explains. */
  explainedEnds: number;
}

const CHECK_EVERY_MS = 5000;
const ANSWER_MS = 15_000;
/** A session ended this long after a stream-svc or kubelet kill is taken as ended by it. */
const KILL_WINDOW_MS = 30_000;
/** Starting again may fail while stream-svc or the kubelet comes back; for longer than this it is a problem. */
const DOWN_LIMIT_MS = 120_000;
const MAX_STARTS = 300;

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  output(): string;
  stderr(): string;
}

function spawnSession(ctx: SoakContext, args: string[]): Running {
  const child = ctx.node.spawnKubectl(args);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString('utf8')).slice(-100_000)));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, exited, output: () => out, stderr: () => err.trim() };
}

function exitedWithin(session: Running, ms: number): Promise<boolean> {
  return Promise.race([session.exited.then(() => true), sleep(ms).then(() => false)]);
}

/**
 * The shared loop: `start` makes a session and resolves once it answered a first check (or
 * undefined); `check` answers whether it still works.
 */
async function runSession(
  ctx: SoakContext,
  name: string,
  signal: AbortSignal,
  start: () => Promise<Running | undefined>,
  check: (session: Running, n: number) => Promise<boolean>,
): Promise<SessionStats> {
  const stats: SessionStats = { name, checks: 0, ends: 0, explainedEnds: 0 };
  let downSince = Date.now();
  let reportedDown = false;
  for (let starts = 0; !signal.aborted && starts < MAX_STARTS; starts++) {
    const session = await start();
    if (session === undefined) {
      if (!reportedDown && Date.now() - downSince > DOWN_LIMIT_MS) {
        reportedDown = true;
        ctx.report.problem('other', 1, `the ${name} session could not be started again for ${Math.round((Date.now() - downSince) / 1000)} s; ${ctx.kills.describe(Date.now())}`);
      }
      await sleep(2000, signal);
      continue;
    }
    downSince = Date.now();
    reportedDown = false;
    let why = '';
    for (let n = 1; !signal.aborted; n++) {
      if (await Promise.race([session.exited.then(() => true), sleep(CHECK_EVERY_MS, signal).then(() => false)])) {
        why = `ended (exit ${session.child.exitCode ?? session.child.signalCode}): ${session.stderr() || 'no message'}`;
        break;
      }
      if (signal.aborted) break;
      if (await check(session, n)) {
        stats.checks++;
        continue;
      }
      // A check that fails because the session is ending counts as its end.
      why = (await exitedWithin(session, 2000)) ? `ended (exit ${session.child.exitCode ?? session.child.signalCode}): ${session.stderr() || 'no message'}` : 'stopped answering';
      break;
    }
    if (session.child.exitCode === null && session.child.signalCode === null) session.child.kill('SIGTERM');
    await session.exited;
    if (signal.aborted && why === '') break;
    const at = Date.now();
    stats.ends++;
    const carriers = ctx.kills.recent(at, KILL_WINDOW_MS, STREAM_CARRIERS);
    if (carriers.length > 0) stats.explainedEnds++;
    else ctx.report.problem('other', 1, `the ${name} session ${why} at ${since(undefined, at)} with no stream-svc or kubelet kill before it; ${ctx.kills.describe(at)}`);
    downSince = Date.now();
    await sleep(1000, signal);
  }
  return stats;
}

export function runExecSession(ctx: SoakContext, pod: string, signal: AbortSignal): Promise<SessionStats> {
  const waitFor = async (session: Running, token: string): Promise<boolean> => {
    const deadline = Date.now() + ANSWER_MS;
    while (Date.now() < deadline && session.child.exitCode === null && session.child.signalCode === null) {
      if (session.output().includes(`${token}\n`)) return true;
      await sleep(100);
    }
    return session.output().includes(`${token}\n`);
  };
  let serial = 0;
  return runSession(
    ctx,
    'exec',
    signal,
    async () => {
      const session = spawnSession(ctx, ['exec', '-i', pod, '-c', containerName, '--', 'cat']);
      session.child.stdin!.on('error', () => undefined);
      // What is written before the stream is up may be read by no one: write until one comes back.
      for (let i = 0; i < 6; i++) {
        const token = `ping-${++serial}`;
        session.child.stdin!.write(`${token}\n`);
        if (await waitFor(session, token)) return session;
        if (session.child.exitCode !== null || session.child.signalCode !== null) break;
      }
      session.child.kill('SIGTERM');
      await session.exited;
      return undefined;
    },
    async (session) => {
      const token = `ping-${++serial}`;
      if (!session.child.stdin!.writable) return false;
      session.child.stdin!.write(`${token}\n`);
      return waitFor(session, token);
    },
  );
}

function get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/index.html', agent: false, timeout: ANSWER_MS }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve(body));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

export function runPortForwardSession(ctx: SoakContext, pod: string, signal: AbortSignal): Promise<SessionStats> {
  const localPort = new WeakMap<Running, number>();
  const answers = async (session: Running): Promise<boolean> => {
    const port = localPort.get(session);
    if (port === undefined) return false;
    // One retry: a connection can meet the moment a daemon restarts without the session being at fault.
    for (let i = 0; i < 2; i++) {
      if ((await get(port).catch(() => '')) === 'ok\n') return true;
      await sleep(1000);
    }
    return false;
  };
  return runSession(
    ctx,
    'port-forward',
    signal,
    async () => {
      const session = spawnSession(ctx, ['port-forward', `pod/${pod}`, `:${HTTP_PORT}`]);
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && session.child.exitCode === null) {
        const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(session.output());
        if (m) {
          localPort.set(session, Number(m[1]));
          if (await answers(session)) return session;
          break;
        }
        await sleep(200);
      }
      session.child.kill('SIGTERM');
      await session.exited;
      return undefined;
    },
    answers,
  );
}

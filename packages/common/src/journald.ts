/**
 * Starts systemd-journald where nothing else does (a host whose PID 1 is not systemd): conmon's
 * journald log driver and logs-svc both need one listening.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathExists } from './path-exists.js';
import { pollUntil } from './poll.js';

export const JOURNALD_BINARY = '/lib/systemd/systemd-journald';
/** journald's stream socket; accepting a connection on it proves journald is alive. */
export const JOURNALD_STDOUT_SOCKET = '/run/systemd/journal/stdout';
/** journald's native protocol socket, where logger --journald and conmon send their entries. */
export const JOURNALD_NATIVE_SOCKET = '/run/systemd/journal/socket';

function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function journaldRunning(): Promise<boolean> {
  return canConnect(JOURNALD_STDOUT_SOCKET);
}

/** Where journald writes until it is told to flush to /var/log/journal. */
const RUNTIME_JOURNAL_ROOT = '/run/log/journal';
/** Left by journald once it writes to /var/log/journal instead. */
const FLUSHED_FLAG = '/run/systemd/journal/flushed';

/**
 * Waits until journald has made its journal. It listens first: a `journalctl --follow` started in
 * between watches only the journal directories there are, so it would never see an entry.
 */
async function waitForJournal(deadline: number): Promise<void> {
  const made = await pollUntil(async () => ((await pathExists(RUNTIME_JOURNAL_ROOT)) || (await pathExists(FLUSHED_FLAG)) ? true : undefined), deadline - performance.now(), 20);
  if (!made) throw new Error(`journald listens but made no journal under ${RUNTIME_JOURNAL_ROOT} in time; is its Storage= set to none?`);
}

/**
 * Where the journald we start reads a drop-in (journald also reads /etc/systemd/journald.conf.d
 * and /usr/lib/systemd/journald.conf.d); under /run it lasts only until the next boot.
 */
const JOURNALD_DROP_IN_DIR = '/run/systemd/journald.conf.d';

/**
 * journald's default rate limit (10000 messages per 30 s per cgroup) would drop the lines of a
 * busy container: container logs must not be thinned, so the journald we start has none.
 * Its default size, a tenth of the filesystem up to 4 GiB, makes a `journalctl` started from a
 * cursor (logs-svc's follower, at each start of logs-svc) slow to start: it looks into every
 * file, a few random reads each, which on a cold, slow disk stall the node's other I/O
 * meanwhile. The journald we start keeps at most 1 GiB in files of 128 MiB: eight or nine files,
 * hours of container output at the rates logs-svc keeps up with.
 */
const JOURNALD_DROP_IN = [
  '[Journal]',
  '# Written by Skiff when it started journald: container output must not be rate-limited,',
  '# and a bounded journal keeps the start of a journalctl reading from a cursor cheap.',
  'RateLimitIntervalSec=0',
  'RateLimitBurst=0',
  'RuntimeMaxUse=1G',
  'SystemMaxUse=1G',
  'RuntimeMaxFileSize=128M',
  'SystemMaxFileSize=128M',
  '',
].join('\n');

async function writeJournaldDropIn(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.writeFile(join(dir, 'skiff.conf'), JOURNALD_DROP_IN, { mode: 0o644 });
}

/**
 * Makes sure a journald is listening and has made its journal, for conmon's journald log driver
 * and logs-svc's follower. On hosts where systemd is not PID 1 nothing starts journald, so we start
 * it ourselves: detached, in its own session, so it outlives us like the containers whose logs it
 * keeps, and without a rate limit.
 */
export async function ensureJournald(options: { binary?: string; timeoutMs?: number } = {}): Promise<{ started: boolean; pid?: number }> {
  const deadline = performance.now() + (options.timeoutMs ?? 10_000);
  if (await journaldRunning()) {
    // Perhaps just started by another process.
    await waitForJournal(deadline);
    return { started: false };
  }
  // A host's own journald keeps the host's settings; only the one we start gets ours.
  await writeJournaldDropIn(JOURNALD_DROP_IN_DIR);
  const binary = options.binary ?? JOURNALD_BINARY;
  const child = spawn(binary, [], { detached: true, stdio: 'ignore' });
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`cannot start ${binary}: ${err.message}`)));
    child.once('exit', (code, signal) => reject(new Error(`${binary} exited at start (${code ?? signal}); see its output in the kernel log`)));
  });
  failed.catch(() => undefined);
  child.unref();
  while (performance.now() < deadline) {
    if (await journaldRunning()) {
      child.removeAllListeners('exit');
      await waitForJournal(deadline);
      return { started: true, pid: child.pid };
    }
    await Promise.race([sleep(50), failed]);
  }
  throw new Error(`${binary} started but ${JOURNALD_STDOUT_SOCKET} did not accept connections in time`);
}

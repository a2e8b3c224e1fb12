import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { JOURNALD_BINARY } from './journald.js';

/**
 * Starts journald with ensureJournald, then follows the journal and sends one entry. It runs in a
 * mount namespace of its own with tmpfs over /run/systemd and /run/log, so the journald it starts
 * has its own sockets and journal and the host's are not touched.
 */
const PROBE = `
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
const { ensureJournald } = await import(process.env.SKIFF_JOURNALD_MODULE);
const { started } = await ensureJournald({ binary: process.env.SKIFF_JOURNALD_BINARY });
const marker = 'skiff-journald-test-' + process.pid;
const follower = spawn('journalctl', ['--follow', '--no-tail', '--quiet', '--output', 'cat', 'MESSAGE=' + marker], { stdio: ['ignore', 'pipe', 'inherit'] });
let seen = false;
follower.stdout.on('data', (chunk) => (seen ||= String(chunk).includes(marker)));
spawn('logger', ['--journald'], { stdio: ['pipe', 'ignore', 'inherit'] }).stdin.end('MESSAGE=' + marker + '\\n');
for (let i = 0; i < 100 && !seen; i++) await sleep(50);
follower.kill();
process.stdout.write(JSON.stringify({ started, seen }));
`;

test('a journal follower started once ensureJournald returns sees entries, however late journald makes its journal', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'journald-test-'));
  const pidFile = join(dir, 'pid');
  t.after(async () => {
    const pid = Number(await readFile(pidFile, 'utf8').catch(() => ''));
    if (pid > 0) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  });
  // journald listens before it makes /run/log/journal; slowing its mkdirs widens that gap from
  // about a millisecond (which a busy machine stretches) to most of a second.
  const slowJournald = join(dir, 'slow-journald');
  await writeFile(slowJournald, `#!/bin/sh\necho $$ > ${pidFile}\nexec strace -f -qq -o /dev/null -e trace=mkdir,mkdirat -e inject=mkdir,mkdirat:delay_enter=200000 ${JOURNALD_BINARY}\n`);
  await chmod(slowJournald, 0o755);

  const probe = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mkdir -p /run/systemd /run/log && mount -t tmpfs skiff-test /run/systemd && mount -t tmpfs skiff-test /run/log && exec "$0" --input-type=module -e "$1"', process.execPath, PROBE], {
    env: { ...process.env, SKIFF_JOURNALD_MODULE: new URL('./journald.js', import.meta.url).href, SKIFF_JOURNALD_BINARY: slowJournald },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  probe.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => probe.on('close', resolve));
  assert.equal(code, 0, `the probe exited ${code}`);
  assert.deepEqual(JSON.parse(out), { started: true, seen: true });
});

/** Starts journald with ensureJournald, then prints journald's own notice of its runtime journal's size and bound. */
const SIZE_PROBE = `
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
const { ensureJournald } = await import(process.env.SKIFF_JOURNALD_MODULE);
const { started, pid } = await ensureJournald();
let notice = '';
for (let i = 0; i < 100 && !notice; i++) {
  const out = spawnSync('journalctl', ['--quiet', '--no-pager', '--output', 'cat', '_TRANSPORT=driver'], { encoding: 'utf8' }).stdout;
  notice = out.split('\\n').find((line) => line.startsWith('Runtime Journal')) ?? '';
  if (!notice) await sleep(50);
}
process.kill(pid, 'SIGKILL');
process.stdout.write(JSON.stringify({ started, notice }));
`;

test('the journald Skiff starts bounds its journal to 1 GiB, whatever the size of the filesystem under it', async () => {
  // A 40 GiB tmpfs (it takes memory only for what is written), on which journald's own bound
  // would be 4 GiB.
  const probe = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mkdir -p /run/systemd /run/log && mount -t tmpfs skiff-test /run/systemd && mount -t tmpfs -o size=40g skiff-test /run/log && exec "$0" --input-type=module -e "$1"', process.execPath, SIZE_PROBE], {
    env: { ...process.env, SKIFF_JOURNALD_MODULE: new URL('./journald.js', import.meta.url).href },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  probe.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => probe.on('close', resolve));
  assert.equal(code, 0, `the probe exited ${code}`);
  const { started, notice } = JSON.parse(out) as { started: boolean; notice: string };
  assert.equal(started, true);
  assert.match(notice, /, max 1\.0G,/, `journald's notice of its runtime journal: ${notice}`);
});

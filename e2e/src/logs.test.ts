/**
 * Container logs through the journal: conmon sends output to journald, logs-svc writes the CRI
 * log files. Checked through the CRI as the kubelet uses it, against a real `skiff up`; an NRI
 * plugin (tools/nri-plugins) holds one CreateContainer while logs-svc restarts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { callUnary, type cri } from '@skiff/proto';
import { criRecords, criStreams, withoutTimes } from './lib/cri-log-file.js';
import { nriPluginBinary, startNriPlugin } from './lib/nri-plugins.js';
import { hasExited } from './lib/process-exited.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { until } from './lib/skiff-instance.js';
import { makeTempDir, removeDir } from './lib/tmp.js';
import { status } from '@grpc/grpc-js';
import { httpCall, logsContainerPath } from '@skiff/common';

let h: RuntimeHarness;
let pod: Pod;
let base: string;

before(async () => {
  base = await makeTempDir('skiff-logs');
  // One test holds a CreateContainer in an NRI plugin while logs-svc restarts.
  h = await startRuntimeHarness({ skiff: { nriConfig: 'request_timeout = "60s"' } });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
  if (base) await removeDir(base);
});

async function logOf(path: string): Promise<{ stdout: Buffer; stderr: Buffer }> {
  return criStreams(await readFile(path));
}

/** The numbers from..to, one a line (what `seq from to` prints). */
function numbers(from: number, to: number): string {
  let s = '';
  for (let i = from; i <= to; i++) s += `${i}\n`;
  return s;
}

/** Checks that the text is every number from 0 on, once each, in order; answers how many. */
function assertConsecutive(text: string, what: string): number {
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', `${what} ends with a newline`);
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== String(i)) assert.fail(`${what}: line ${i} is ${JSON.stringify(lines[i])}, expected ${i} (${lines.length} lines)`);
  }
  return lines.length;
}

test('100,000 lines are all in the file, in order, as soon as the container is reported exited', async () => {
  const id = await h.runContainer(pod, 'hundred-k', { command: ['seq', '1', '100000'] });
  const status = await h.waitForExit(id, 60_000);
  const file = withoutTimes(await readFile(status.log_path));
  const expected = numbers(1, 100000).replace(/^/gm, 'stdout F ').slice(0, -'stdout F '.length);
  if (file !== expected) assert.fail(`the file has ${file.split('\n').length - 1} records, ending ${JSON.stringify(file.slice(-40))}`);
});

test('a 1 MiB line, binary bytes, stderr and a last line without newline are kept byte for byte', async () => {
  const script = [
    "head -c 1048576 /dev/zero | tr '\\000' x; echo",
    "printf 'to stderr\\n' >&2",
    "printf '\\001\\377\\376\\303\\050 bin\\n'",
    "printf 'no newline at the end'",
  ].join('; ');
  const id = await h.runContainer(pod, 'bytes', { command: ['sh', '-c', script] });
  const status = await h.waitForExit(id, 60_000);
  const raw = await readFile(status.log_path);
  const records = criRecords(raw);
  assert.ok(records.every((r) => r.content.length <= 16 * 1024), 'no record is longer than 16 KiB');
  const { stdout, stderr } = criStreams(raw);
  const expected = Buffer.concat([Buffer.alloc(1048576, 'x'), Buffer.from('\n'), Buffer.from([1, 0xff, 0xfe, 0xc3, 0x28]), Buffer.from(' bin\nno newline at the end')]);
  assert.ok(stdout.equals(expected), `stdout differs (${stdout.length} bytes, expected ${expected.length})`);
  assert.equal(stderr.toString(), 'to stderr\n');
  assert.ok(raw.toString('latin1').includes(' stderr F to stderr\n'));
  const tail = withoutTimes(raw).split('\n').filter((r) => r.startsWith('stdout')).slice(-2);
  assert.deepEqual(tail, [`stdout F ${Buffer.from([1, 0xff, 0xfe, 0xc3, 0x28]).toString('latin1')} bin`, 'stdout P no newline at the end'], 'the last line is a partial record');
});

/** A shell loop printing consecutive numbers for about `seconds`. */
function counter(seconds: number): string[] {
  return ['sh', '-c', `end=$(( $(date +%s) + ${seconds} )); i=0; while [ $(date +%s) -lt $end ]; do seq $i $((i+999)); i=$((i+1000)); done`];
}

test('logs-svc killed with SIGKILL five times under load: every line exactly once', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await h.runContainer(pod, `burst-${i}`, { command: counter(30) }));
  // Containers created right after a kill are likely created while logs-svc is down.
  const createdDuringRestart: string[] = [];
  for (let k = 0; k < 5; k++) {
    await new Promise((r) => setTimeout(r, 4000));
    const pid = await h.skiff.servicePid('logs-svc');
    assert.ok(pid, 'logs-svc runs');
    process.kill(pid, 'SIGKILL');
    createdDuringRestart.push(await h.runContainer(pod, `while-down-${k}`, { command: ['seq', '0', '4999'] }));
    await h.skiff.waitForNewPid('logs-svc', pid, 30_000);
  }
  let total = 0;
  for (const id of ids) {
    const status = await h.waitForExit(id, 120_000);
    const { stdout } = await logOf(status.log_path);
    total += assertConsecutive(stdout.toString(), `container ${id}`);
  }
  assert.ok(total > 5000, `the containers printed (${total} lines)`);
  for (const id of createdDuringRestart) {
    const status = await h.waitForExit(id, 120_000);
    assert.equal(assertConsecutive((await logOf(status.log_path)).stdout.toString(), `container ${id}`), 5000);
  }
});

test('a container made while logs-svc is down, and listed only after a new logs-svc read the list, keeps every line', async (t) => {
  const release = join(base, 'release');
  const pluginLog = join(base, 'gate.log');
  const times = (line: string): number => h.skiff.output().split(line).length - 1;
  const registeredBefore = times('NRI plugin registered');
  const gate = await startNriPlugin(await nriPluginBinary(), join(h.skiff.runDir, 'nri.sock'), ['-name', 'logs-gate', '-idx', '10', '-mode', 'container-gate', '-hold', 'gated-', '-release', release, '-log', pluginLog], () => times('NRI plugin registered') > registeredBefore);
  t.after(() => gate.stop());
  const supervisor = Number.parseInt(await readFile(join(h.skiff.runDir, 'skiff.pid'), 'utf8'), 10);
  const logsPid = await h.skiff.servicePid('logs-svc');
  assert.ok(logsPid, 'logs-svc runs');
  const readyBefore = times('logs service ready');
  const refusedBefore = times('logs-svc did not take the container');
  // The supervisor stopped: logs-svc stays down until the container is being made.
  process.kill(supervisor, 'SIGSTOP');
  let created: Promise<string> | undefined;
  try {
    process.kill(logsPid, 'SIGKILL');
    // Its parent is stopped: a zombie is as far as it gets, and its sockets are closed by then.
    await until('logs-svc to exit', 10_000, async () => hasExited(logsPid) || undefined);
    created = h.createContainer(pod, 'gated-seq', { command: ['seq', '0', '4999'] });
    created.catch(() => undefined);
    await until('the plugin to hold CreateContainer', 30_000, async () => ((await readFile(pluginLog, 'utf8').catch(() => '')).includes('holding gated-seq') || undefined));
    await until('runtime-svc to find logs-svc down', 10_000, async () => times('logs-svc did not take the container') > refusedBefore || undefined);
  } finally {
    process.kill(supervisor, 'SIGCONT');
  }
  // A new logs-svc reads runtime-svc's list while the container is not in it yet.
  await h.skiff.waitForNewPid('logs-svc', logsPid);
  await until('the new logs-svc to be ready', 30_000, async () => times('logs service ready') > readyBefore || undefined);
  await writeFile(release, '');
  assert.ok(created);
  const id = await created;
  await callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 });
  const exited = await h.waitForExit(id, 60_000);
  assert.equal(assertConsecutive((await logOf(exited.log_path)).stdout.toString(), `container ${id}`), 5000);
});

test('a container created, run and exited while logs-svc is down keeps every line; its exit waits for logs-svc', async () => {
  const supervisor = Number.parseInt(await readFile(join(h.skiff.runDir, 'skiff.pid'), 'utf8'), 10);
  const logsPid = await h.skiff.servicePid('logs-svc');
  assert.ok(logsPid, 'logs-svc runs');
  let id = '';
  process.kill(supervisor, 'SIGSTOP');
  try {
    process.kill(logsPid, 'SIGKILL');
    await until('logs-svc to exit', 10_000, async () => hasExited(logsPid) || undefined);
    id = await h.runContainer(pod, 'while-down', { command: ['sh', '-c', 'seq 0 4999; exec sleep 2'] });
    const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true }, { timeoutMs: 10_000 });
    const { pid } = JSON.parse(info['info']!) as { pid: number };
    await until('the container to exit', 30_000, async () => hasExited(pid) || undefined);
    assert.notEqual((await h.containerStatus(id)).state, 'CONTAINER_EXITED', 'no exit is reported while logs-svc cannot flush');
  } finally {
    process.kill(supervisor, 'SIGCONT');
  }
  await h.skiff.waitForNewPid('logs-svc', logsPid);
  const exited = await h.waitForExit(id, 60_000);
  assert.equal(assertConsecutive((await logOf(exited.log_path)).stdout.toString(), `container ${id}`), 5000);
});

test('a container logs-svc stopped following before it started: its exit waits until logs-svc has read its output back from the journal', async () => {
  const id = await h.createContainer(pod, 'unfollowed', { command: ['seq', '0', '4999'] });
  // As if logs-svc had lost the container: it follows it no more, and its saved cursor moves past its lines.
  const socketPath = join(h.skiff.runDir, 'logs-internal.sock');
  const forgot = await httpCall({ socketPath, path: logsContainerPath(id) }, { method: 'DELETE', timeoutMs: 10_000 });
  assert.equal(forgot.status, 204);
  await callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 });
  const exited = await h.waitForExit(id, 60_000);
  assert.equal(assertConsecutive((await logOf(exited.log_path)).stdout.toString(), `container ${id}`), 5000);
  assert.match(h.skiff.output(), /logs-svc did not follow the container; asking it to read its output back from the journal/);
});

test('a rotation under heavy output: the renamed file and the new one hold every line once', async () => {
  const id = await h.runContainer(pod, 'rotated', { command: counter(8) });
  const path = (await h.containerStatus(id)).log_path;
  await new Promise((r) => setTimeout(r, 3000));
  await rename(path, `${path}.1`);
  await callUnary(h.runtime, 'ReopenContainerLog', { container_id: id }, { timeoutMs: 30_000 });
  const status = await h.waitForExit(id, 60_000);
  const old = await logOf(`${path}.1`);
  const current = await logOf(path);
  assert.ok(old.stdout.length > 0 && current.stdout.length > 0, 'both files have lines');
  assertConsecutive(Buffer.concat([old.stdout, current.stdout]).toString(), 'old + new');
  await assert.rejects(callUnary(h.runtime, 'ReopenContainerLog', { container_id: status.id }, { timeoutMs: 30_000 }), /not running/);
});

/**
 * Runs a container that prints a line and exits: once its exit is reported, logs-svc has written
 * (or dropped) every entry the journal took before that container's flush barrier.
 */
async function journalPassedBy(name: string): Promise<void> {
  const witness = await h.runContainer(pod, name, { command: ['echo', 'witness'] });
  const exited = await h.waitForExit(witness, 60_000);
  assert.equal((await logOf(exited.log_path)).stdout.toString(), 'witness\n');
}

test('a container removed while its lines are in flight leaves no file behind', async () => {
  const id = await h.runContainer(pod, 'removed-busy', { command: counter(30) });
  const path = (await h.containerStatus(id)).log_path;
  await new Promise((r) => setTimeout(r, 1500));
  // The kubelet deletes the log file, then removes the container.
  await rm(path, { force: true });
  await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
  await journalPassedBy('after-removed-busy');
  assert.equal(existsSync(path), false, 'no stray log file');
});

/** Sends one journal entry as user nobody, over the socket conmon uses. */
function sendAsNobody(fields: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'logger', '--journald'], { stdio: ['pipe', 'ignore', 'inherit'] });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`logger as nobody exited ${code}`))));
    child.stdin.end(fields);
  });
}

test("lines forged by another local user for a container never reach its log; the container's own do", async () => {
  const id = await h.runContainer(pod, 'forged', { command: ['sh', '-c', 'echo first; sleep 2; echo last'] });
  for (const priority of [6, 3]) await sendAsNobody(`MESSAGE=forged line\nCONTAINER_ID_FULL=${id}\nPRIORITY=${priority}\nSYSLOG_IDENTIFIER=${id}\n`);
  const status = await h.waitForExit(id, 30_000);
  const { stdout, stderr } = await logOf(status.log_path);
  assert.equal(stdout.toString(), 'first\nlast\n');
  assert.equal(stderr.toString(), '');
});

test('a symbolic link at the log file, its directory or a directory above the pod fails CreateContainer; nothing is made or written through it', async () => {
  const outside = await mkdtemp(join(tmpdir(), 'skiff-e2e-outside-'));
  try {
    const precious = join(outside, 'precious');
    await writeFile(precious, 'precious\n');
    const linkedPod = await h.runPod();
    await mkdir(linkedPod.config.log_directory!, { recursive: true });
    await symlink(precious, join(linkedPod.config.log_directory!, 'to-file.log'));
    await symlink(outside, join(linkedPod.config.log_directory!, 'dir'));
    const linkedRoot = join(h.logDir, 'linked-root');
    await symlink(outside, linkedRoot);
    const podUnderLink = await h.runPod({ log_directory: join(linkedRoot, 'pod') });
    const attempt = (pod: Pod, name: string, overrides: Partial<cri.ContainerConfig>): Promise<{ code?: number; details?: string } | undefined> =>
      h.runContainer(pod, name, overrides).then(() => undefined, (err: { code?: number; details?: string }) => err);
    const refusals = [
      [join(linkedPod.config.log_directory!, 'to-file.log'), await attempt(linkedPod, 'to-file', { command: ['echo', 'through a file link'] })],
      [join(linkedPod.config.log_directory!, 'dir'), await attempt(linkedPod, 'to-dir', { command: ['echo', 'through a directory link'], log_path: 'dir/0.log' })],
      [linkedRoot, await attempt(podUnderLink, 'under-link', { command: ['echo', 'through a link above the pod'], log_path: 'c/0.log' })],
    ] as const;
    // Lines that were wrongly followed would be written by now.
    await journalPassedBy('after-links');
    assert.equal(await readFile(precious, 'utf8'), 'precious\n');
    assert.deepEqual(await readdir(outside), ['precious'], 'nothing was made through a link');
    for (const [link, err] of refusals) {
      assert.equal(err?.code, status.INVALID_ARGUMENT, `${link}: ${err?.details ?? 'the container ran'}`);
      assert.ok((err?.details ?? '').includes(`${link}: it is a symbolic link`), err?.details);
    }
  } finally {
    await rm(outside, { recursive: true, force: true });
  }
});

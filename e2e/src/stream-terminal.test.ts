import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { callUnary, type cri } from '@skiff/proto';
import { openRemoteCommand, type RemoteCommand } from './lib/remote-command.js';
import { eventually } from './lib/stream-client.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

let h: RuntimeHarness;
let pod: Pod;

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox'] });
  pod = await h.runPod({ labels: { suite: 'runtime-e2e', case: 'stream-terminal' } });
});

after(async () => {
  await h?.stop();
});

async function execUrl(containerId: string, cmd: string[], streams: Partial<cri.ExecRequest> = { tty: true, stdin: true, stdout: true }): Promise<string> {
  return (await callUnary(h.runtime, 'Exec', { container_id: containerId, cmd, ...streams }, { timeoutMs: 10_000 })).url;
}

async function attachUrl(containerId: string, streams: Partial<cri.AttachRequest>): Promise<string> {
  return (await callUnary(h.runtime, 'Attach', { container_id: containerId, ...streams }, { timeoutMs: 10_000 })).url;
}

/** Host processes whose command line contains every one of `words`. */
/** Until stream-svc has let go of every attach to the container: its attach relays are gone. */
async function detached(containerId: string): Promise<void> {
  await eventually(`the attach relays of ${containerId} to end`, async () => (await processesWith('/usr/bin/python3')).every((p) => !(p.argv.some((a) => a.endsWith('attach-relay.py')) && p.argv.some((a) => a.includes(containerId)))));
}

async function processesWith(...words: string[]): Promise<{ pid: number; argv: string[] }[]> {
  const found: { pid: number; argv: string[] }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const argv = (await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')).split('\0').filter(Boolean);
    if (argv.length > 0 && words.every((w) => argv.includes(w))) found.push({ pid: Number(name), argv });
  }
  return found;
}

/** Types `stty size` until the terminal reports `rows cols` (a resize reaches the pty asynchronously). */
async function waitForTerminalSize(command: RemoteCommand, rows: number, cols: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (let attempt = 0; ; attempt++) {
    const marker = `size${attempt}`;
    command.send(`echo ${marker}=$(stty size)\n`);
    const out = await command.waitForStdout(new RegExp(`${marker}=\\d+ \\d+`));
    if (new RegExp(`${marker}=${rows} ${cols}\\b`).test(out)) return;
    if (Date.now() > deadline) throw new Error(`the terminal never reported ${rows} ${cols}: ${out.slice(-300)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('exec with a terminal and attach through conmon', { timeout: 170_000 }, () => {
  let app: string;

  before(async () => {
    app = await h.runContainer(pod, 'app');
  });

  for (const protocol of ['v5.channel.k8s.io', 'v4.channel.k8s.io']) {
    test(`${protocol}: sh with a terminal takes input, starts at the client's size and exits 0`, async () => {
      const command = await openRemoteCommand(await execUrl(app, ['sh']), protocol);
      command.resize(97, 31);
      // The size was in place before the shell printed anything.
      command.send('echo first=$(stty size) tty=$(tty) term=$TERM; echo sum=$((40+2))\n');
      await command.waitForStdout(/sum=42/);
      assert.match(command.stdout, /first=31 97 tty=\/dev\/pts\/\d+ term=xterm/);
      command.send('exit\n');
      await command.closed;
      assert.equal(command.exitCode(), 0, JSON.stringify(command.status));
    });
  }

  test('exit codes 1 and 137 reach the client as NonZeroExitCode', async () => {
    const one = await openRemoteCommand(await execUrl(app, ['sh']));
    one.send('exit 1\n');
    await one.closed;
    assert.equal(one.status?.reason, 'NonZeroExitCode');
    assert.equal(one.exitCode(), 1);

    const killed = await openRemoteCommand(await execUrl(app, ['sh']));
    killed.send('kill -9 $$\n');
    await killed.closed;
    assert.equal(killed.exitCode(), 137, JSON.stringify(killed.status));
  });

  test('a command without input: output only, and the exit code', async () => {
    const command = await openRemoteCommand(await execUrl(app, ['sh', '-c', 'echo no-stdin; stty size; exit 3'], { tty: true, stdout: true }));
    command.resize(50, 20);
    await command.closed;
    assert.match(command.stdout, /no-stdin\r\n20 50\r\n/);
    assert.equal(command.exitCode(), 3);
  });

  test('a command that cannot start is reported as an error', async () => {
    const command = await openRemoteCommand(await execUrl(app, ['/no/such/command']));
    await command.closed;
    assert.equal(command.status?.status, 'Failure');
    assert.notEqual(command.status?.reason, 'NonZeroExitCode');
    assert.match(command.status?.message ?? '', /no\/such\/command/);
  });

  test('resizes reach the terminal: stty size follows the client', async () => {
    const command = await openRemoteCommand(await execUrl(app, ['sh']));
    command.resize(80, 24);
    await waitForTerminalSize(command, 24, 80);
    command.resize(132, 43);
    await waitForTerminalSize(command, 43, 132);
    command.resize(60, 10);
    await waitForTerminalSize(command, 10, 60);
    command.send('exit\n');
    await command.closed;
    assert.equal(command.exitCode(), 0);
  });

  test('the exec\'d process, its conmon and the relay are gone after the client vanishes', async () => {
    const seconds = String(4000 + Math.floor(Math.random() * 5000));
    const command = await openRemoteCommand(await execUrl(app, ['sh', '-c', `echo started; exec sleep ${seconds}`]));
    await command.waitForStdout(/started/);
    await eventually('sleep runs', async () => (await processesWith('sleep', seconds)).length === 1);
    assert.equal((await processesWith('--exec-attach', app)).length, 1, 'one conmon for the exec');
    command.vanish();
    await eventually('sleep is killed', async () => (await processesWith('sleep', seconds)).length === 0);
    await eventually('conmon for the exec ends', async () => (await processesWith('--exec-attach', app)).length === 0);
    await eventually('no relay is left', async () => (await processesWith('/usr/bin/python3')).every((p) => !p.argv.some((a) => a.startsWith(h.skiff.runDir))));
    await eventually('the exec scratch directory is removed', async () => (await readdir(join(h.skiff.runDir, 'stream'))).every((n) => !n.startsWith('exec-')));
    assert.equal((await h.containerStatus(app)).state, 'CONTAINER_RUNNING');
  });

  test('attach to a TTY container: input, output and resize; detaching leaves it running', async () => {
    const id = await h.runContainer(pod, 'tty-shell', { command: ['sh'], tty: true, stdin: true });
    const first = await openRemoteCommand(await attachUrl(id, { tty: true, stdin: true, stdout: true }));
    first.resize(100, 30);
    await waitForTerminalSize(first, 30, 100);
    first.send('echo attached-$((6*7))\n');
    await first.waitForStdout(/attached-42/);
    first.close();
    await first.closed;
    await detached(id);
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');

    // The same shell answers a second client, input still open.
    const second = await openRemoteCommand(await attachUrl(id, { tty: true, stdin: true, stdout: true }));
    second.send('echo again-$((5+5))\n');
    await second.waitForStdout(/again-10/);
    second.vanish();
    await detached(id);
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
  });

  test('attach to a non-TTY container: stdout and stderr apart; detaching leaves it running', async () => {
    const id = await h.runContainer(pod, 'chatter', {
      command: ['sh', '-c', 'i=0; while true; do echo out-$i; echo err-$i >&2; i=$((i+1)); sleep 0.1; done'],
    });
    const command = await openRemoteCommand(await attachUrl(id, { stdout: true, stderr: true }));
    await command.waitForStdout(/(out-\d+\n){3}/);
    await command.waitForStderr(/(err-\d+\n){3}/);
    command.close();
    await command.closed;
    assert.match(command.stdout, /^(out-\d+\n)+$/);
    assert.match(command.stderr, /^(err-\d+\n)+$/);
    await detached(id);
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');

    // Attach asking for stdout only gets no stderr.
    const onlyOut = await openRemoteCommand(await attachUrl(id, { stdout: true }), 'v4.channel.k8s.io');
    await onlyOut.waitForStdout(/(out-\d+\n){2}/);
    onlyOut.close();
    await onlyOut.closed;
    assert.equal(onlyOut.stderr, '');
    assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
  });

  test('stdin_once: stdin is closed after the first attach ends; without it stdin stays open', async () => {
    const script = 'cat > /tmp/input; echo closed > /tmp/stdin-closed; sleep 3600';
    const once = await h.runContainer(pod, 'stdin-once', { command: ['sh', '-c', script], stdin: true, stdin_once: true });
    const kept = await h.runContainer(pod, 'stdin-kept', { command: ['sh', '-c', script], stdin: true, stdin_once: false });
    for (const id of [once, kept]) {
      const command = await openRemoteCommand(await attachUrl(id, { stdin: true, stdout: true, stderr: true }));
      command.send(`line for ${id.slice(0, 8)}\n`);
      await eventually('input arrives', async () => (await h.exec(id, ['cat', '/tmp/input'])).stdout.includes(id.slice(0, 8)));
      command.close();
      await command.closed;
    }
    await eventually('stdin_once container sees end of input', async () => (await h.exec(once, ['cat', '/tmp/stdin-closed'])).stdout === 'closed\n');
    await detached(kept);
    assert.notEqual((await h.exec(kept, ['cat', '/tmp/stdin-closed'])).code, 0, 'stdin stays open without stdin_once');
    // Without stdin_once a later client still writes to the same stdin.
    const again = await openRemoteCommand(await attachUrl(kept, { stdin: true, stdout: true }));
    again.send('second line\n');
    await eventually('second input arrives', async () => (await h.exec(kept, ['cat', '/tmp/input'])).stdout.includes('second line'));
    again.close();
    await again.closed;
    assert.equal((await h.containerStatus(once)).state, 'CONTAINER_RUNNING');
  });
});

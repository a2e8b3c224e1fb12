/**
 * SPDY/3.1 streaming through the CRI on a real `skiff up`: Exec, Attach and PortForward answer
 * stream URLs, which are upgraded to SPDY/3.1 as kubectl and the kubelet's clients do; then real
 * kubectl binaries through an API server fixture: 1.20 (Go spdystream) and the machine's newer one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collect, openSpdy, openSpdyOverWebSocket, spdyExec, spdyForward } from '@skiff/stream-svc/testing/spdy-client';
import { callUnary, type cri } from '@skiff/proto';
import { StreamPod } from './lib/stream-pod.js';
import { startApiServerFixture, type ApiServerFixture } from './lib/api-server-fixture.js';
import { eventually } from './lib/stream-client.js';
import { builtKubectl, spdyKubectl, type Kubectl } from './lib/kubectl.js';
import { openSpdyRemoteCommand, type SpdyRemoteCommand } from './lib/spdy-remote-command.js';

const ECHO_PORT = 8080;
const CLOSED_PORT = 8081;
const CHATTER = 'i=0; while true; do echo out-$i; echo err-$i >&2; i=$((i+1)); sleep 0.1; done';

/** Types `stty size` until the terminal reports `rows cols` (a resize reaches the pty asynchronously). */
async function waitForTerminalSize(command: SpdyRemoteCommand, rows: number, cols: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const marker = `size${attempt}`;
    command.send(`echo ${marker}=$(stty size)\n`);
    const out = await command.waitForStdout(new RegExp(`${marker}=\\d+ \\d+`));
    if (new RegExp(`${marker}=${rows} ${cols}\\b`).test(out)) return;
    if (attempt >= 50) throw new Error(`the terminal never reported ${rows} ${cols}: ${out.slice(-300)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('SPDY/3.1 streaming', { timeout: 300_000 }, () => {
  let sp: StreamPod;

  before(async () => {
    sp = await StreamPod.start(ECHO_PORT);
  });

  after(async () => {
    await sp?.h.stop();
  });

  it('v4: stdin, stdout and stderr apart, Success; the client\'s preference wins', async () => {
    const url = await sp.execUrl(['sh', '-c', 'cat; echo to-stderr >&2'], { stdin: true, stdout: true, stderr: true });
    const r = await spdyExec(url, ['v4.channel.k8s.io', 'v3.channel.k8s.io'], { stdin: Buffer.from('hello over spdy\n'), stdout: true, stderr: true });
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.equal(r.stdout.toString(), 'hello over spdy\n');
    assert.equal(r.stderr.toString(), 'to-stderr\n');
    assert.equal(JSON.parse(r.error).status, 'Success');

    const v3 = await spdyExec(await sp.execUrl(['echo', 'v3']), ['v3.channel.k8s.io', 'v4.channel.k8s.io']);
    assert.equal(v3.protocol, 'v3.channel.k8s.io');
    assert.equal(v3.stdout.toString(), 'v3\n');
    assert.equal(v3.error, '', 'v1-v3 send nothing on success');
  });

  it('v4 exit codes 0, 1 and 137 as metav1.Status', async () => {
    for (const [script, code] of [['exit 0', 0], ['exit 1', 1], ['kill -9 $$', 137]] as const) {
      const r = await spdyExec(await sp.execUrl(['sh', '-c', script]), ['v4.channel.k8s.io']);
      const status = JSON.parse(r.error);
      if (code === 0) assert.equal(status.status, 'Success');
      else {
        assert.equal(status.status, 'Failure');
        assert.equal(status.reason, 'NonZeroExitCode');
        assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: String(code) }]);
      }
    }
  });

  it('older protocols: v2 and unnegotiated (channel.k8s.io) report failure as text', async () => {
    const v2 = await spdyExec(await sp.execUrl(['sh', '-c', 'echo out; exit 3']), ['v2.channel.k8s.io']);
    assert.equal(v2.protocol, 'v2.channel.k8s.io');
    assert.equal(v2.stdout.toString(), 'out\n');
    assert.match(v2.error, /non-zero exit code.*exit code 3/);
    const v1 = await spdyExec(await sp.execUrl(['echo', 'v1']), []);
    assert.equal(v1.protocol, '');
    assert.equal(v1.stdout.toString(), 'v1\n');
    assert.equal(v1.error, '');
  });

  it('no acceptable protocol is refused with 403 and the accepted list', async () => {
    const url = await sp.execUrl(['true']);
    await assert.rejects(openSpdy(url, ['v9.channel.k8s.io']), (err: { statusCode: number; headers: Record<string, string>; body: string }) => {
      assert.equal(err.statusCode, 403);
      assert.equal(err.headers['x-accepted-stream-protocol-versions'], 'v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io');
      assert.match(err.body, /v9\.channel\.k8s\.io.*v4\.channel\.k8s\.io/);
      return true;
    });
  });

  it('10 MB of stdin comes back byte-exact through cat', async () => {
    const input = randomBytes(10 * 1024 * 1024);
    const r = await spdyExec(await sp.execUrl(['cat'], { stdin: true, stdout: true, stderr: true }), ['v4.channel.k8s.io'], { stdin: input, stdout: true, stderr: true });
    assert.equal(r.stdout.length, input.length);
    assert.ok(r.stdout.equals(input), 'stdout differs from stdin');
    assert.equal(JSON.parse(r.error).status, 'Success');
  });

  it('tokens are single use; unknown tokens are 404', async () => {
    const url = await sp.execUrl(['true']);
    await spdyExec(url, ['v4.channel.k8s.io']);
    await assert.rejects(openSpdy(url, ['v4.channel.k8s.io']), { statusCode: 404 });
    await assert.rejects(openSpdy(url.replace(/\/exec\/[^/]+$/, '/exec/not-a-token'), ['v4.channel.k8s.io']), { statusCode: 404 });
  });

  it('a client that vanishes mid-stream leaves no process behind', async () => {
    const url = await sp.execUrl(['sh', '-c', 'echo started; exec sleep 1000'], { stdout: true });
    const client = await openSpdy(url, ['v4.channel.k8s.io']);
    client.connection.createStream(new Map([['streamtype', 'error']]));
    const stdout = client.connection.createStream(new Map([['streamtype', 'stdout']]));
    await new Promise<void>((resolve) => stdout.onData(() => resolve()));
    assert.equal((await sp.h.exec(sp.app, ['sh', '-c', 'ps | grep -c "[s]leep 1000"'])).stdout.trim(), '1');
    client.socket!.destroy();
    await eventually('the exec process to be killed', async () => (await sp.h.exec(sp.app, ['sh', '-c', 'ps | grep -c "[s]leep 1000"'])).stdout.trim() === '0');
  });

  it('port-forward: 20 connections at once on one session, a refused port, then more', async () => {
    const client = await openSpdy(await sp.forwardUrl(), ['portforward.k8s.io']);
    assert.equal(client.protocol, 'portforward.k8s.io');
    const payloads = Array.from({ length: 20 }, () => randomBytes(256 * 1024));
    const results = await Promise.all(payloads.map((p, i) => spdyForward(client.connection, ECHO_PORT, String(i), p)));
    results.forEach((r, i) => {
      assert.equal(r.error, '');
      assert.ok(r.data.equals(payloads[i]!), `connection ${i} got ${r.data.length} bytes back`);
    });
    const refused = await spdyForward(client.connection, CLOSED_PORT, '20', Buffer.from('x'));
    assert.match(refused.error, /error forwarding port 8081.*refused/i);
    const after = await spdyForward(client.connection, ECHO_PORT, '21', Buffer.from('still here\n'));
    assert.equal(after.data.toString(), 'still here\n');
    client.connection.close();
    await client.closed;
  });

  it('port-forward: clients without requestID are paired by stream id', async () => {
    const client = await openSpdy(await sp.forwardUrl(), ['portforward.k8s.io']);
    for (const text of ['first\n', 'second\n']) {
      const r = await spdyForward(client.connection, ECHO_PORT, undefined, Buffer.from(text));
      assert.equal(r.data.toString(), text);
    }
    client.connection.close();
  });

  it('port-forward: SPDY tunneled in a WebSocket, 20 connections at once', async () => {
    const client = await openSpdyOverWebSocket(await sp.forwardUrl());
    assert.equal(client.protocol, 'SPDY/3.1+portforward.k8s.io');
    const payloads = Array.from({ length: 20 }, () => randomBytes(128 * 1024));
    const results = await Promise.all(payloads.map((p, i) => spdyForward(client.connection, ECHO_PORT, String(i), p)));
    results.forEach((r, i) => assert.ok(r.data.equals(payloads[i]!), `connection ${i} got ${r.data.length} bytes back`));
    const refused = await spdyForward(client.connection, CLOSED_PORT, '20', Buffer.from('x'));
    assert.match(refused.error, /refused/i);
    client.connection.close();
  });

  it('port-forward: a data stream without its error stream is never forwarded; other pairs are', async () => {
    const client = await openSpdy(await sp.forwardUrl(), ['portforward.k8s.io']);
    const lone = client.connection.createStream(new Map([['streamtype', 'data'], ['port', String(ECHO_PORT)], ['requestid', 'lonely']]));
    const got = collect(lone);
    lone.write(Buffer.from('nobody echoes this'));
    const r = await spdyForward(client.connection, ECHO_PORT, 'other', Buffer.from('ok\n'));
    assert.equal(r.data.toString(), 'ok\n');
    client.socket!.destroy();
    assert.equal((await got).length, 0);
  });

  it('stream-svc stopping ends live sessions: the client sees the end and the process is gone', async () => {
    const url = await sp.execUrl(['sh', '-c', 'echo started; exec sleep 1001'], { stdout: true });
    const client = await openSpdy(url, ['v4.channel.k8s.io']);
    client.connection.createStream(new Map([['streamtype', 'error']])).onData(() => undefined);
    const stdout = client.connection.createStream(new Map([['streamtype', 'stdout']]));
    await new Promise<void>((resolve) => stdout.onData(() => resolve()));
    await sp.h.restartSkiff();
    await client.closed;
    assert.equal(client.socket!.destroyed, true, 'the client saw its connection end');
    let left = '';
    await eventually('the exec process to be killed', async () => (left = (await sp.h.exec(sp.app, ['sh', '-c', 'ps | grep -c "[s]leep 1001"'])).stdout.trim()) === '0');
    assert.equal(left, '0', 'no exec process left in the container');
  });

  describe('terminals and attach', () => {
    const terminal = { tty: true, stdin: true, stdout: true };
    const attachUrl = async (containerId: string, streams: Partial<cri.AttachRequest>): Promise<string> =>
      (await callUnary(sp.h.runtime, 'Attach', { container_id: containerId, ...streams })).url;

    it('exec with a terminal starts at the client\'s size, follows resizes and exits 0', async () => {
      const command = await openSpdyRemoteCommand(await sp.execUrl(['sh'], terminal), terminal);
      command.resize(97, 31);
      command.send('echo first=$(stty size) tty=$(tty); echo sum=$((40+2))\n');
      await command.waitForStdout(/sum=42/);
      assert.match(command.stdout, /first=31 97 tty=\/dev\/pts\/\d+/);
      command.resize(132, 43);
      await waitForTerminalSize(command, 43, 132);
      command.send('exit 4\n');
      await command.closed;
      assert.equal(command.exitCode(), 4, JSON.stringify(command.status));
    });

    it('attach to a TTY container: input, output and resize; detaching leaves it running', async () => {
      const id = await sp.h.runContainer(sp.pod, 'spdy-tty-shell', { command: ['sh'], tty: true, stdin: true });
      const command = await openSpdyRemoteCommand(await attachUrl(id, terminal), terminal);
      command.resize(100, 30);
      await waitForTerminalSize(command, 30, 100);
      command.resize(70, 20);
      await waitForTerminalSize(command, 20, 70);
      command.send('echo attached-$((6*7))\n');
      await command.waitForStdout(/attached-42/);
      command.close();
      await command.closed;
      assert.equal((await sp.h.containerStatus(id)).state, 'CONTAINER_RUNNING');
    });

    it('attach to a non-TTY container: stdout and stderr apart; detaching leaves it running', async () => {
      const id = await sp.h.runContainer(sp.pod, 'spdy-chatter', { command: ['sh', '-c', CHATTER] });
      const command = await openSpdyRemoteCommand(await attachUrl(id, { stdout: true, stderr: true }), { stdout: true, stderr: true });
      await command.waitForStdout(/(out-\d+\n){3}/);
      await command.waitForStderr(/(err-\d+\n){3}/);
      command.close();
      await command.closed;
      assert.match(command.stdout, /^(out-\d+\n)+$/);
      assert.match(command.stderr, /^(err-\d+\n)+$/);
      assert.equal((await sp.h.containerStatus(id)).state, 'CONTAINER_RUNNING');
    });
  });

  const kubectls: { title: string; get: () => Promise<Kubectl>; upgrade: RegExp; execOffer: RegExp; forwardOffer: RegExp }[] = [
    { title: 'kubectl 1.20 from Debian (Go spdystream)', get: spdyKubectl, upgrade: /^SPDY\/3\.1$/, execOffer: /v4\.channel\.k8s\.io/, forwardOffer: /portforward\.k8s\.io/ },
    { title: 'the kubectl scripts/kube-tools.sh builds (WebSocket)', get: builtKubectl, upgrade: /^websocket$/i, execOffer: /v5\.channel\.k8s\.io/, forwardOffer: /SPDY\/3\.1\+portforward\.k8s\.io/ },
  ];
  for (const k of kubectls) {
    describe(`${k.title} through an API server fixture`, () => {
      const podName = 'spdy-pod';
      let kubectl: Kubectl;
      let home = '';
      before(async () => {
        kubectl = await k.get();
        home = mkdtempSync(join(tmpdir(), 'skiff-kubectl-'));
        writeFileSync(join(home, 'kubeconfig'), '');
      });
      after(() => rmSync(home, { recursive: true, force: true }));
      const kubectlArgs = (server: string): string[] => ['--kubeconfig', join(home, 'kubeconfig'), '--cache-dir', join(home, 'cache'), '--server', server, '--namespace', 'default'];
      const assertSpoke = (api: ApiServerFixture, subresource: string, offer: RegExp): void => {
        const seen = api.upgrades.filter((u) => u.subresource === subresource);
        assert.ok(seen.length > 0, `no ${subresource} upgrade reached the fixture`);
        for (const u of seen) {
          assert.match(u.upgrade, k.upgrade, `${subresource} upgraded with ${JSON.stringify(u)}`);
          assert.match(u.protocols, offer);
        }
      };

      it('exec: stdin, stdout, stderr and the exit code', async () => {
        const api = await startApiServerFixture(sp.h.runtime, { name: podName, sandboxId: sp.pod.id, containerId: sp.app });
        try {
          const input = randomBytes(2 * 1024 * 1024);
          const child = spawn(kubectl.path, [...kubectlArgs(api.url), 'exec', '-i', podName, '-c', 'app', '--', 'sh', '-c', 'cat; echo to-stderr >&2; exit 3'], { stdio: ['pipe', 'pipe', 'pipe'] });
          const out: Buffer[] = [];
          let err = '';
          child.stdout.on('data', (c: Buffer) => out.push(c));
          child.stderr.on('data', (c: Buffer) => (err += c.toString()));
          child.stdin.on('error', () => undefined);
          child.stdin.end(input);
          const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
          assert.equal(code, 3, err);
          assert.ok(Buffer.concat(out).equals(input), `stdout: ${Buffer.concat(out).length} bytes of ${input.length}`);
          assert.match(err, /to-stderr/);
          assertSpoke(api, 'exec', k.execOffer);
        } finally {
          await api.close();
        }
      });

      it('attach to a non-TTY container: its output until kubectl is stopped', async () => {
        const id = await sp.h.runContainer(sp.pod, `kubectl-chatter-${kubectl.minor}`, { command: ['sh', '-c', CHATTER] });
        const api = await startApiServerFixture(sp.h.runtime, { name: podName, sandboxId: sp.pod.id, containerId: id });
        const child = spawn(kubectl.path, [...kubectlArgs(api.url), 'attach', podName, '-c', 'app'], { stdio: ['ignore', 'pipe', 'pipe'] });
        try {
          let out = '';
          let err = '';
          child.stderr.on('data', (c: Buffer) => (err += c.toString()));
          await new Promise<void>((resolve, reject) => {
            child.stdout.on('data', (c: Buffer) => {
              out += c.toString();
              if (/(out-\d+\n){3}/.test(out)) resolve();
            });
            child.once('exit', (code) => reject(new Error(`kubectl attach exited with ${code}: ${out} ${err}`)));
          });
          await eventually('stderr lines', async () => /(err-\d+\n){2}/.test(err));
          assertSpoke(api, 'attach', k.execOffer);
        } finally {
          child.kill('SIGTERM');
          await api.close();
        }
        assert.equal((await sp.h.containerStatus(id)).state, 'CONTAINER_RUNNING');
      });

      it('port-forward: parallel connections to a server in the pod', async () => {
        const api = await startApiServerFixture(sp.h.runtime, { name: podName, sandboxId: sp.pod.id, containerId: sp.app });
        const child = spawn(kubectl.path, [...kubectlArgs(api.url), 'port-forward', podName, `:${ECHO_PORT}`], { stdio: ['ignore', 'pipe', 'pipe'] });
        try {
          let output = '';
          const localPort = await new Promise<number>((resolve, reject) => {
            const onData = (c: Buffer): void => {
              output += c.toString();
              const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(output);
              if (m) resolve(Number(m[1]));
            };
            child.stdout.on('data', onData);
            child.stderr.on('data', onData);
            child.once('exit', (code) => reject(new Error(`kubectl port-forward exited with ${code}: ${output}`)));
          });
          const echo = (payload: Buffer): Promise<Buffer> =>
            new Promise((resolve, reject) => {
              const socket = connect(localPort, '127.0.0.1');
              const got: Buffer[] = [];
              let bytes = 0;
              socket.on('data', (c: Buffer) => {
                got.push(c);
                bytes += c.length;
                if (bytes >= payload.length) {
                  socket.destroy();
                  resolve(Buffer.concat(got));
                }
              });
              socket.once('error', reject);
              socket.write(payload);
            });
          const payloads = Array.from({ length: 8 }, () => randomBytes(64 * 1024));
          const results = await Promise.all(payloads.map(echo));
          results.forEach((r, i) => assert.ok(r.equals(payloads[i]!), `connection ${i}`));
          assertSpoke(api, 'portforward', k.forwardOffer);
        } finally {
          child.kill('SIGTERM');
          await api.close();
        }
      });
    });
  }
});

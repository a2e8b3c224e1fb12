/**
 * WebSocket streaming through the CRI on a real `skiff up`: exec over v4 and v5 (our client and
 * @kubernetes/client-node's), port-forward over v4.channel.k8s.io, token rules.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { Exec, KubeConfig, type V1Status } from '@kubernetes/client-node';
import { StreamPod } from './lib/stream-pod.js';
import { eventually, openWebSocket, wsExec, wsForwardOnce } from './lib/stream-client.js';

const ECHO_PORT = 8080;
const CLOSED_PORT = 8081;

/** A kubeconfig whose server is the streaming server, as if the API server were in front of it. */
function kubeConfigFor(baseUrl: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'skiff', server: baseUrl, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'skiff', cluster: 'skiff', user: 'nobody' }],
    currentContext: 'skiff',
  });
  return kc;
}

describe('WebSocket streaming', { timeout: 180_000 }, () => {
  let sp: StreamPod;

  before(async () => {
    sp = await StreamPod.start(ECHO_PORT);
  });

  after(async () => {
    await sp?.h.stop();
  });

  for (const protocol of ['v5.channel.k8s.io', 'v4.channel.k8s.io']) {
    it(`${protocol}: exit codes 0, 1 and 137`, async () => {
      for (const [script, code] of [['exit 0', 0], ['exit 1', 1], ['kill -9 $$', 137]] as const) {
        const r = await wsExec(await sp.execUrl(['sh', '-c', script]), protocol);
        assert.equal(r.protocol, protocol);
        const status = JSON.parse(r.error);
        if (code === 0) assert.equal(status.status, 'Success');
        else assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: String(code) }]);
      }
    });
  }

  it('v5: 10 MB of stdin comes back byte-exact, stdin closed with [255, 0]', async () => {
    const input = randomBytes(10 * 1024 * 1024);
    const r = await wsExec(await sp.execUrl(['cat'], { stdin: true, stdout: true, stderr: true }), 'v5.channel.k8s.io', input);
    assert.equal(r.stdout.length, input.length);
    assert.ok(r.stdout.equals(input));
    assert.equal(JSON.parse(r.error).status, 'Success');
  });

  it('v4: large output (8 MiB) is byte-exact', async () => {
    const r = await wsExec(await sp.execUrl(['sh', '-c', 'head -c 8388608 /dev/zero | tr "\\0" "x"']), 'v4.channel.k8s.io');
    assert.equal(r.stdout.length, 8 * 1024 * 1024);
    assert.ok(r.stdout.every((b) => b === 0x78));
  });

  it('@kubernetes/client-node Exec runs a command through the stream URL', async () => {
    const url = new URL(await sp.execUrl(['sh', '-c', 'cat; echo done >&2; exit 4'], { stdin: true, stdout: true, stderr: true }));
    const kc = kubeConfigFor(url.origin);
    // Exec's own WebSocket handler, pointed at the URL: the API server would route /api/v1/.../exec to it.
    const exec = new Exec(kc);
    const handler = exec.handler;
    exec.handler = { connect: (_path, text, binary) => handler.connect(url.pathname, text, binary) };
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    stdout.on('data', (c: Buffer) => out.push(c));
    stderr.on('data', (c: Buffer) => err.push(c));
    const status = await new Promise<V1Status>((resolve, reject) => {
      exec.exec('default', 'pod', 'app', ['ignored'], stdout, stderr, Readable.from([Buffer.from('from client-node\n')]), false, resolve).catch(reject);
    });
    assert.equal(Buffer.concat(out).toString(), 'from client-node\n');
    assert.equal(Buffer.concat(err).toString(), 'done\n');
    assert.equal(status.status, 'Failure');
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details?.causes, [{ reason: 'ExitCode', message: '4' }]);
  });

  it('port-forward v4.channel.k8s.io: 20 sessions at once; a refused port keeps the session', async () => {
    const payloads = Array.from({ length: 20 }, () => randomBytes(64 * 1024));
    const results = await Promise.all(
      payloads.map(async (p) => wsForwardOnce(await sp.forwardUrl([ECHO_PORT]), p, p.length)),
    );
    results.forEach((r, i) => assert.ok(r.data.equals(payloads[i]!), `session ${i} got ${r.data.length} bytes back`));

    const url = await sp.forwardUrl([CLOSED_PORT, ECHO_PORT]);
    const frames = new Map<number, Buffer[]>();
    const ws = await openWebSocket(url, ['v4.channel.k8s.io'], (m) => frames.set(m[0]!, [...(frames.get(m[0]!) ?? []), m.subarray(1)]));
    await eventually('the refusal', async () => (frames.get(1)?.length ?? 0) >= 2);
    assert.match(Buffer.concat(frames.get(1)!.slice(1)).toString(), /8081.*refused/i);
    ws.send(Buffer.concat([Buffer.of(2), Buffer.from('alive\n')]));
    await eventually('the echo on the second port', async () => Buffer.concat((frames.get(2) ?? []).slice(1)).toString() === 'alive\n');
    ws.close();
  });

  it('a used token and an unknown token are refused with 404', async () => {
    const url = await sp.execUrl(['true']);
    await wsExec(url, 'v5.channel.k8s.io');
    await assert.rejects(wsExec(url, 'v5.channel.k8s.io'), { statusCode: 404 });
    await assert.rejects(wsExec(url.replace(/\/exec\/[^/]+$/, '/exec/AAAAAAAAAAAAAAAAAAAAAA'), 'v5.channel.k8s.io'), { statusCode: 404 });
  });

  it('a client that vanishes during cat leaves no process behind', async () => {
    const url = await sp.execUrl(['sh', '-c', 'echo started; exec cat /dev/stdin'], { stdin: true, stdout: true });
    let started: () => void = () => undefined;
    const ready = new Promise<void>((r) => (started = r));
    const ws = await openWebSocket(url, ['v5.channel.k8s.io'], (m) => m[0] === 1 && started());
    await ready;
    const count = async (): Promise<string> => (await sp.h.exec(sp.app, ['sh', '-c', 'ps -o pid,args | grep -c "[c]at /dev/stdin"'])).stdout.trim();
    assert.equal(await count(), '1', (await sp.h.exec(sp.app, ['ps', '-o', 'pid,args'])).stdout);
    ws.terminate();
    await eventually('the exec process to be killed', async () => (await count()) === '0');
  });
});

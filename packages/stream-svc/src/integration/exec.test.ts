import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { rejectsWith, isRoot, type TestDaemon } from '@skiff/test-support';
import type { StreamDaemon } from './stream-daemon.js';
import { startStreamPod, type StreamPod } from './stream-pod.js';
import { openStream, runSession } from '../testing/ws-client.js';

describe('exec over WebSocket', { skip: !isRoot && 'needs root', timeout: 120_000 }, () => {
  let pod: StreamPod | undefined;
  let d: TestDaemon;
  let stream: StreamDaemon;
  let containerId: string;

  before(async () => {
    pod = await startStreamPod('app', ['sleep', '3600']);
    ({ runtime: d, stream, containerId } = pod);
  });

  after(async () => {
    await pod?.stop();
  });

  async function execUrl(cmd: string[], streams: Partial<cri.ExecRequest> = { stdout: true, stderr: true }): Promise<string> {
    return (await callUnary(d.client, 'Exec', { container_id: containerId, cmd, ...streams })).url;
  }

  it('answers a URL on the streaming server', { timeout: 20_000 }, async () => {
    const url = await execUrl(['true']);
    assert.ok(url.startsWith(`${stream.baseUrl}/exec/`), url);
  });

  it('v5: stdin round trip with half-close, stdout and stderr apart, Success', { timeout: 20_000 }, async () => {
    const url = await execUrl(['sh', '-c', 'cat; echo to-stderr >&2'], { stdin: true, stdout: true, stderr: true });
    const r = await runSession(url, 'v5.channel.k8s.io', 'hello from stdin\n');
    assert.equal(r.stdout, 'hello from stdin\n');
    assert.equal(r.stderr, 'to-stderr\n');
    assert.equal(JSON.parse(r.error).status, 'Success');
  });

  it('v4: stdin round trip and exit code 1 as NonZeroExitCode', { timeout: 20_000 }, async () => {
    const url = await execUrl(['sh', '-c', 'read line; echo "got $line"; exit 1'], { stdin: true, stdout: true, stderr: true });
    const r = await runSession(url, 'v4.channel.k8s.io', 'abcde\n');
    assert.equal(r.stdout, 'got abcde\n');
    const s = JSON.parse(r.error);
    assert.equal(s.status, 'Failure');
    assert.equal(s.reason, 'NonZeroExitCode');
    assert.deepEqual(s.details.causes, [{ reason: 'ExitCode', message: '1' }]);
  });

  it('v4.base64: output is carried as base64 text', { timeout: 20_000 }, async () => {
    const r = await runSession(await execUrl(['echo', 'base64 works']), 'v4.base64.channel.k8s.io');
    assert.equal(r.stdout, 'base64 works\n');
    assert.equal(JSON.parse(r.error).status, 'Success');
  });

  it('a process killed by SIGKILL reports 137', { timeout: 20_000 }, async () => {
    const r = await runSession(await execUrl(['sh', '-c', 'kill -9 $$']), 'v5.channel.k8s.io');
    assert.deepEqual(JSON.parse(r.error).details.causes, [{ reason: 'ExitCode', message: '137' }]);
  });

  it('channel.k8s.io (v1) reports failures as text and nothing on success', { timeout: 20_000 }, async () => {
    const ok = await runSession(await execUrl(['true']), 'channel.k8s.io');
    assert.equal(ok.error, '');
    const failed = await runSession(await execUrl(['false']), 'channel.k8s.io');
    assert.match(failed.error, /exit code 1/);
  });

  it('a token is single use; unknown tokens are 404', { timeout: 20_000 }, async () => {
    const url = await execUrl(['true']);
    await runSession(url, 'v5.channel.k8s.io');
    await assert.rejects(openStream(url, 'v5.channel.k8s.io'), { statusCode: 404 });
    await assert.rejects(openStream(`${stream.baseUrl}/exec/not-a-token`, 'v5.channel.k8s.io'), { statusCode: 404 });
  });

  it('the exec process is killed when the client goes away', { timeout: 20_000 }, async () => {
    const url = await execUrl(['sh', '-c', 'echo started; exec sleep 1000'], { stdout: true });
    const ws = await openStream(url, 'v5.channel.k8s.io');
    await new Promise((resolve) => ws.once('message', resolve));
    ws.terminate();
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = await callUnary(d.client, 'ExecSync', { container_id: containerId, cmd: ['sh', '-c', 'ps | grep -c "[s]leep 1000"'], timeout: 5 });
      if (r.stdout.toString().trim() === '0') break;
      assert.ok(Date.now() < deadline, 'the exec process still runs 10 s after the client left');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  it('the kubelet\'s validation applies', { timeout: 20_000 }, async () => {
    await rejectsWith(callUnary(d.client, 'Exec', { container_id: containerId, cmd: ['true'], tty: true, stdout: true, stderr: true }), status.INVALID_ARGUMENT, /tty and stderr/);
    await rejectsWith(callUnary(d.client, 'Exec', { container_id: containerId, cmd: ['true'] }), status.INVALID_ARGUMENT, /one of stdin, stdout or stderr/);
    await rejectsWith(callUnary(d.client, 'Exec', { container_id: '', cmd: ['true'], stdout: true }), status.INVALID_ARGUMENT, /container_id/);
  });

  it('answers UNAVAILABLE while stream-svc is down', { timeout: 20_000 }, async () => {
    await stream.stop();
    await rejectsWith(callUnary(d.client, 'Exec', { container_id: containerId, cmd: ['true'], stdout: true }), status.UNAVAILABLE, /stream-svc is not running/);
  });
});

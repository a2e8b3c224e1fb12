/**
 * Configuration keys the README documents, shown to take effect on a real `skiff up`:
 * image.max_concurrent_downloads, image.pull_progress_timeout, stream.idle_timeout and logs.flush_timeout.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary } from '@skiff/proto';
import { logsContainerPath } from '@skiff/common';
import { pushTestImage } from './lib/image-catalogue.js';
import { startRegistry, type Registry } from './lib/registry.js';
import { startSkiff } from './lib/skiff-instance.js';
import { StreamPod } from './lib/stream-pod.js';
import { openWebSocket } from './lib/stream-client.js';
import { childrenOf } from './lib/child-pids.js';

/** How long a held blob download waits before it is passed on: long enough for the others to queue up. */
const BLOB_HOLD_MS = 400;

/**
 * A pass-through proxy in front of a registry that holds every blob download for a while and
 * records how many were in flight at once.
 */
async function startCountingProxy(upstream: Registry): Promise<{ host: string; maxInFlight: () => number; blobs: () => number; close: () => Promise<void> }> {
  let inFlight = 0;
  let maxInFlight = 0;
  let blobs = 0;
  const server: Server = createServer((req, res) => {
    const isBlob = req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '');
    const forward = (): void => {
      const upstreamReq = request(`${upstream.url}${req.url}`, { method: req.method, headers: { ...req.headers, host: upstream.host } }, (up: IncomingMessage) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstreamReq.on('error', () => res.destroy());
      req.pipe(upstreamReq);
    };
    if (!isBlob) return forward();
    blobs += 1;
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => (inFlight -= 1));
    setTimeout(forward, BLOB_HOLD_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    maxInFlight: () => maxInFlight,
    blobs: () => blobs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A proxy in front of a registry whose blob downloads send their first bytes and then nothing,
 * keeping the connection open: only a progress timeout can end such a pull.
 */
async function startStallingProxy(upstream: Registry): Promise<{ host: string; close: () => Promise<void> }> {
  const held: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    const isBlob = req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '');
    const upstreamReq = request(`${upstream.url}${req.url}`, { method: req.method, headers: { ...req.headers, host: upstream.host } }, (up: IncomingMessage) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (!isBlob) {
        up.pipe(res);
        return;
      }
      up.once('data', (chunk: Buffer) => {
        res.write(chunk.subarray(0, 16));
        up.pause();
        held.push(up);
      });
    });
    upstreamReq.on('error', () => res.destroy());
    req.pipe(upstreamReq);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => {
      for (const up of held) up.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function commandOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
}

function post(socketPath: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? '' : JSON.stringify(body);
    const method = body === undefined ? 'POST' : 'PUT';
    const req = request({ socketPath, path, method, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

describe('documented configuration keys take effect', { timeout: 180_000 }, () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('image.max_concurrent_downloads bounds the layers downloaded at once, across the node', async () => {
    const registry = await startRegistry();
    cleanups.push(() => registry.stop());
    const proxy = await startCountingProxy(registry);
    cleanups.push(() => proxy.close());
    const pushed = await pushTestImage(registry, 'multilayer');
    const other = await pushTestImage(registry, 'busybox-uncompressed');
    const skiff = await startSkiff({ imageConfig: 'max_concurrent_downloads = 2' });
    cleanups.push(() => skiff.stop());
    const images = skiff.imageClient();
    const viaProxy = (reference: string): string => reference.replace(registry.host, proxy.host);
    // Two pulls at once: three layers and one more, four blob downloads that the limit must share.
    await Promise.all([
      callUnary(images, 'PullImage', { image: { image: viaProxy(pushed.reference) } }, { timeoutMs: 60_000 }),
      callUnary(images, 'PullImage', { image: { image: viaProxy(other.reference) } }, { timeoutMs: 60_000 }),
    ]);
    assert.ok(proxy.blobs() >= 4, `expected at least 4 layer downloads, saw ${proxy.blobs()}`);
    assert.equal(proxy.maxInFlight(), 2, 'two downloads at once, never more');
  });

  it('image.pull_progress_timeout ends a pull whose download stops sending, and leaves nothing', async () => {
    const registry = await startRegistry();
    cleanups.push(() => registry.stop());
    const proxy = await startStallingProxy(registry);
    cleanups.push(() => proxy.close());
    const pushed = await pushTestImage(registry, 'busybox');
    const skiff = await startSkiff({ imageConfig: 'pull_progress_timeout = "2s"' });
    cleanups.push(() => skiff.stop());
    const images = skiff.imageClient();
    await assert.rejects(
      callUnary(images, 'PullImage', { image: { image: pushed.reference.replace(registry.host, proxy.host) } }, { timeoutMs: 60_000 }),
      (err: { code?: number; details?: string }) => err.code === status.UNAVAILABLE && /sent no data for 2 s/.test(err.details ?? ''),
    );
    assert.deepEqual((await callUnary(images, 'ListImages', {})).images, []);
  });

  it('stream.idle_timeout closes a stream with no traffic', async () => {
    const sp = await StreamPod.start(8080, { streamConfig: 'idle_timeout = "2s"' });
    cleanups.push(() => sp.h.stop());
    // A command that prints nothing for a minute: only the idle timeout can end the stream early.
    const url = await sp.execUrl(['sleep', '60'], { stdout: true });
    const ws = await openWebSocket(url, ['v5.channel.k8s.io'], () => undefined);
    const closed = await Promise.race([
      new Promise<boolean>((resolve) => ws.once('close', () => resolve(true))),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000)),
    ]);
    ws.terminate();
    assert.ok(closed, 'the idle stream was closed by the server');
  });

  it('logs.flush_timeout bounds a flush that cannot pass through the journal', async () => {
    const skiff = await startSkiff({ logsConfig: 'flush_timeout = "1s"' });
    cleanups.push(() => skiff.stop());
    const logsPid = await skiff.servicePid('logs-svc');
    assert.ok(logsPid, 'logs-svc runs');
    const socket = join(skiff.runDir, 'logs-internal.sock');
    // skiff up answers once image-svc and runtime-svc do; logs-svc may still be binding its socket.
    for (const deadline = Date.now() + 30_000; !existsSync(socket) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    const id = 'f'.repeat(64);
    const track = await post(socket, logsContainerPath(id), { logPath: join(skiff.dir, 'flush-test', 'c.log') });
    assert.equal(track.status, 204, track.text);
    // The journal follower, stopped: the flush marker can never be read back. logs-svc starts it
    // once runtime-svc has told it the containers, which may be a moment after its socket is up.
    let follower: number | undefined;
    for (const deadline = Date.now() + 30_000; follower === undefined && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      follower = childrenOf(logsPid).find((pid) => commandOf(pid).endsWith('journalctl'));
    }
    assert.ok(follower, 'logs-svc follows the journal with journalctl');
    process.kill(follower, 'SIGSTOP');
    try {
      const flush = await post(socket, logsContainerPath(id, 'flush'));
      assert.equal(flush.status, 504, flush.text);
      assert.match(flush.text, /within 1000 ms/);
    } finally {
      process.kill(follower, 'SIGCONT');
    }
  });
});

/**
 * stream-svc benchmark, through `skiff up` with busybox pulled from a local registry:
 *   - `echo` round trip: CRI Exec plus the stream URL, over WebSocket v5 and over SPDY v4, p50/p99
 *     of N runs, beside `runc exec` of the same container run directly (the floor);
 *   - port-forward throughput of 1 GiB from a server in the pod, over SPDY, SPDY in a WebSocket
 *     and WebSocket v4, beside a direct TCP copy from the pod IP (the floor);
 *   - stream-svc RSS fresh, with 100 idle exec sessions (half SPDY, half WebSocket), and after all
 *     the runs;
 *   - stream-svc RSS while one WebSocket client reads an exec's output (1 GiB of zeros) at a fixed
 *     rate (1 MiB/s), sampled every second, beside the idle RSS (the floor).
 *
 *   node bench/dist/stream.js [--runs N] [--bytes B] [--sessions S] [--slow-bytes B] [--slow-rate B/s] [--slow-only]
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRuntimeHarness, type Pod, type RuntimeHarness, openWebSocket, wsExec } from '@skiff/e2e/lib';
import { openSpdy, openSpdyOverWebSocket, spdyExec, type SpdyClient } from '@skiff/stream-svc/testing/spdy-client';
import { mib, ms, percentile, printTable, rssBytes, timed } from './stats.js';

const run = promisify(execFile);
const SOURCE_PORT = 9000;

function latencyRow(label: string, samples: number[], floor?: number): [string, string] {
  const p50 = percentile(samples, 50);
  const ratio = floor ? ` (${(p50 / floor).toFixed(2)}x the floor)` : '';
  return [label, `p50 ${ms(p50)}, p99 ${ms(percentile(samples, 99))}${ratio}`];
}

function rate(bytes: number, millis: number): string {
  return `${((bytes / 1024 / 1024) / (millis / 1000)).toFixed(0)} MiB/s`;
}

/** Reads from a fresh TCP connection to the pod until the server closes it. */
function directCopy(ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    const socket = connect(SOURCE_PORT, ip);
    socket.on('data', (c: Buffer) => (bytes += c.length));
    socket.once('error', reject);
    socket.once('close', () => resolve(bytes));
  });
}

/** One forwarded connection over a SPDY session, read to the end; our side stays open until then. */
function spdyDownload(client: SpdyClient, id: string): Promise<number> {
  const headers = (type: string): Map<string, string> => new Map([['streamtype', type], ['port', String(SOURCE_PORT)], ['requestid', id]]);
  const error = client.connection.createStream(headers('error'));
  error.end();
  error.onData(() => undefined);
  const data = client.connection.createStream(headers('data'));
  let bytes = 0;
  data.onData((c) => (bytes += c.length));
  return new Promise((resolve) => {
    data.onEnd(() => {
      data.end();
      resolve(bytes);
    });
    data.onReset(() => resolve(bytes));
  });
}

function wsDownload(url: string, expect: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let frames = 0;
    let ws: Awaited<ReturnType<typeof openWebSocket>> | undefined;
    openWebSocket(url, ['v4.channel.k8s.io'], (m) => {
      if (m[0] !== 0 || frames++ === 0) return;
      bytes += m.length - 1;
      if (bytes >= expect) {
        ws?.close();
        resolve(bytes);
      }
    }).then((socket) => {
      ws = socket;
      socket.once('close', () => resolve(bytes));
    }, reject);
  });
}

/**
 * Reads an exec's stdout over WebSocket v5 at `rate` bytes a second (pausing the socket when ahead)
 * and samples stream-svc's RSS every second meanwhile; answers the bytes read and the samples.
 */
async function slowRead(url: string, rate: number, streamPid: number): Promise<{ bytes: number; millis: number; samples: number[] }> {
  let bytes = 0;
  const started = performance.now();
  const samples: number[] = [];
  let ws: Awaited<ReturnType<typeof openWebSocket>> | undefined;
  const sampler = setInterval(() => void rssBytes(streamPid).then((rss) => samples.push(rss), () => undefined), 1000);
  try {
    await new Promise<void>((resolve, reject) => {
      openWebSocket(url, ['v5.channel.k8s.io'], (m) => {
        if (m[0] !== 1) return;
        bytes += m.length - 1;
        const ahead = bytes / rate - (performance.now() - started) / 1000;
        if (ahead > 0.05 && ws && !ws.isPaused) {
          ws.pause();
          setTimeout(() => ws?.resume(), ahead * 1000);
        }
      }).then((socket) => {
        ws = socket;
        socket.once('close', () => resolve());
      }, reject);
    });
  } finally {
    clearInterval(sampler);
  }
  return { bytes, millis: performance.now() - started, samples };
}

async function slowReaderMemory(h: RuntimeHarness, app: string, streamPid: number, total: number, bytesPerSecond: number): Promise<void> {
  const idle = await rssBytes(streamPid);
  const { url } = await callUnary(h.runtime, 'Exec', { container_id: app, cmd: ['head', '-c', String(total), '/dev/zero'], stdout: true });
  const { bytes, millis, samples } = await slowRead(url, bytesPerSecond, streamPid);
  const at = (share: number): number => samples[Math.min(samples.length - 1, Math.floor(samples.length * share))] ?? 0;
  printTable(`stream-svc RSS while one client reads ${mib(total)} of exec output at ${mib(bytesPerSecond)}/s (target: flat, < 100 MB)`, [
    ['RSS idle (floor)', mib(idle)],
    ['RSS at 25% / 50% / 75% / end', [0.25, 0.5, 0.75, 1].map((s) => mib(at(s))).join(' / ')],
    ['RSS peak', mib(Math.max(...samples))],
    ['read', `${mib(bytes)} in ${ms(millis)}: ${rate(bytes, millis)}${bytes === total ? '' : ` (expected ${mib(total)}: INCOMPLETE)`}`],
  ]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '200' },
      bytes: { type: 'string', default: String(1 << 30) },
      sessions: { type: 'string', default: '100' },
      'slow-bytes': { type: 'string', default: String(1 << 30) },
      'slow-rate': { type: 'string', default: String(1 << 20) },
      'slow-only': { type: 'boolean', default: false },
    },
  });
  const runs = Number(values.runs);
  const total = Number(values.bytes);
  const sessions = Number(values.sessions);
  const h: RuntimeHarness = await startRuntimeHarness({ images: ['busybox'] });
  try {
    const pod: Pod = await h.runPod();
    const app = await h.runContainer(pod, 'app');
    await h.runContainer(pod, 'source', { command: ['nc', '-ll', '-p', String(SOURCE_PORT), '-e', 'head', '-c', String(total), '/dev/zero'] });
    const ip = await h.podIp(pod);
    const streamPid = await h.skiff.servicePid('stream-svc');
    if (streamPid === undefined) throw new Error('no pid for stream-svc');
    const memory: [string, string][] = [];
    const execUrl = async (cmd: string[], stdin = false): Promise<string> => (await callUnary(h.runtime, 'Exec', { container_id: app, cmd, stdout: true, stderr: true, stdin })).url;
    if (values['slow-only']) {
      await slowReaderMemory(h, app, streamPid, Number(values['slow-bytes']), Number(values['slow-rate']));
      return;
    }

    // ------------------------------------------------------------ memory with idle sessions
    const fresh = await rssBytes(streamPid);
    const open: { close(): void }[] = [];
    for (let i = 0; i < sessions; i++) {
      const url = await execUrl(['cat'], true);
      if (i % 2 === 0) {
        const client = await openSpdy(url, ['v4.channel.k8s.io']);
        for (const type of ['error', 'stdin', 'stdout', 'stderr']) client.connection.createStream(new Map([['streamtype', type]])).onData(() => undefined);
        open.push({ close: () => client.socket?.destroy() });
      } else {
        const socket = await openWebSocket(url, ['v5.channel.k8s.io'], () => undefined);
        open.push({ close: () => socket.terminate() });
      }
    }
    await new Promise((r) => setTimeout(r, 2000));
    const loaded = await rssBytes(streamPid);
    for (const s of open) s.close();
    memory.push(['RSS of a fresh stream-svc', mib(fresh)], [`RSS with ${sessions} idle exec sessions`, mib(loaded)]);
    await new Promise((r) => setTimeout(r, 2000));
    // ------------------------------------------------------------ exec round trip
    const runcRoot = join(h.skiff.runDir, 'runc');
    const floor: number[] = [];
    const ws: number[] = [];
    const spdy: number[] = [];
    for (let i = 0; i < 5; i++) await wsExec(await execUrl(['echo', 'hi']), 'v5.channel.k8s.io');
    for (let i = 0; i < runs; i++) {
      floor.push(await timed(() => run('runc', ['--root', runcRoot, 'exec', app, 'echo', 'hi'])));
      ws.push(await timed(async () => wsExec(await execUrl(['echo', 'hi']), 'v5.channel.k8s.io')));
      spdy.push(await timed(async () => spdyExec(await execUrl(['echo', 'hi']), ['v4.channel.k8s.io'])));
    }
    const floorP50 = percentile(floor, 50);
    printTable(`exec echo round trip, ${runs} runs each (target: p50 <= 2x the floor)`, [
      latencyRow('runc exec (floor)', floor),
      latencyRow('CRI Exec + WebSocket v5', ws, floorP50),
      latencyRow('CRI Exec + SPDY v4', spdy, floorP50),
    ]);

    // ------------------------------------------------------------ port-forward throughput
    const forwardUrl = async (ports: number[] = []): Promise<string> => (await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: pod.id, port: ports })).url;
    const throughput: [string, string][] = [];
    let direct = 0;
    const directMs = await timed(async () => (direct = await directCopy(ip)));
    throughput.push(['direct TCP from the pod IP (floor)', `${mib(direct)} in ${ms(directMs)}: ${rate(direct, directMs)}`]);
    const measure = async (label: string, transfer: () => Promise<number>): Promise<void> => {
      let bytes = 0;
      const took = await timed(async () => (bytes = await transfer()));
      const share = ((bytes / took) / (direct / directMs)) * 100;
      throughput.push([label, `${mib(bytes)} in ${ms(took)}: ${rate(bytes, took)} (${share.toFixed(0)}% of the floor)`]);
    };
    await measure('SPDY', async () => {
      const client = await openSpdy(await forwardUrl(), ['portforward.k8s.io']);
      const bytes = await spdyDownload(client, '0');
      client.connection.close();
      return bytes;
    });
    await measure('SPDY in a WebSocket', async () => {
      const client = await openSpdyOverWebSocket(await forwardUrl());
      const bytes = await spdyDownload(client, '0');
      client.connection.close();
      return bytes;
    });
    await measure('WebSocket v4.channel.k8s.io', async () => wsDownload(await forwardUrl([SOURCE_PORT]), total));
    printTable(`port-forward throughput, ${mib(total)} (target: >= 80% of the floor)`, throughput);
    memory.push(['RSS after all the runs above', mib(await rssBytes(streamPid))]);
    printTable(`stream-svc memory (target: < 100 MiB with ${sessions} idle sessions)`, memory);
    await slowReaderMemory(h, app, streamPid, Number(values['slow-bytes']), Number(values['slow-rate']));

  } finally {
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

/**
 * Each daemon's own Prometheus metrics, after some activity (a pull, a pod, an exec over the
 * streaming server, a port-forward, container output): every endpoint passes `promtool check metrics` (Debian's
 * promtool, unpacked from the prometheus package) and holds its families with sane values.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { busyboxEchoServer } from '@skiff/test-support';
import { debianBinary } from './lib/debian-binary.js';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';
import { eventually, wsExec, wsForwardOnce } from './lib/stream-client.js';

const run = promisify(execFile);
let h: RuntimeHarness;
const SERVICES = ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc'] as const;
const pages = new Map<string, string>();
const ECHO_PORT = 8080;
const FORWARDED = 4096;

async function scrape(service: string): Promise<string> {
  const address = (await readFile(join(h.skiff.runDir, `${service}.metrics`), 'utf8')).trim();
  const response = await fetch(`http://${address}/metrics`);
  assert.equal(response.status, 200, `${service} answers /metrics`);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The sum of a family's samples whose labels include `labels`. */
function value(page: string, family: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of page.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== family) continue;
    if (!Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) continue;
    found = true;
    sum += Number(m[3]);
  }
  assert.ok(found, `${family} ${JSON.stringify(labels)} is exposed`);
  return sum;
}

before(async () => {
  h = await startRuntimeHarness();
  const pod = await h.runPod();
  const id = await h.runContainer(pod, 'talker', { command: ['sh', '-c', 'for i in 1 2 3 4 5; do echo line $i; done; sleep 3600'] });
  await h.exec(id, ['true']);
  const { url } = await callUnary(h.runtime, 'Exec', { container_id: id, cmd: ['echo', 'over the stream'], stdout: true, stderr: true });
  assert.equal((await wsExec(url, 'v5.channel.k8s.io')).stdout.toString(), 'over the stream\n');
  await h.runContainer(pod, 'echo', { command: busyboxEchoServer(ECHO_PORT) });
  const payload = Buffer.alloc(FORWARDED, 'x');
  await eventually('the echo server to answer through port-forward', async () => {
    const forward = (await callUnary(h.runtime, 'PortForward', { pod_sandbox_id: pod.id, port: [ECHO_PORT] })).url;
    return (await wsForwardOnce(forward, payload, payload.length, 10_000)).data.length === payload.length;
  });
  // The container's lines reach its log file through logs-svc.
  const logPath = (await h.containerStatus(id)).log_path;
  for (let i = 0; i < 100 && !(await readFile(logPath, 'utf8').catch(() => '')).includes('line 5'); i++) await new Promise((r) => setTimeout(r, 100));
  for (const service of SERVICES) pages.set(service, await scrape(service));
});

after(async () => {
  await h?.stop();
});

describe('daemon metrics', () => {
  test('every endpoint passes promtool check metrics', async () => {
    const promtool = await debianBinary('prometheus', 'usr/bin/promtool');
    for (const [service, page] of pages) {
      const check = run(promtool, ['check', 'metrics']);
      check.child.stdin!.end(page);
      const { stdout, stderr } = await check.catch((err: { stdout: string; stderr: string }) => assert.fail(`${service}: ${err.stdout}${err.stderr}`));
      assert.equal(`${stdout}${stderr}`.trim(), '', `${service}: promtool has nothing to say`);
    }
  });

  test('gRPC calls, pulls and containers of image-svc and runtime-svc', () => {
    const image = pages.get('image-svc')!;
    assert.ok(value(image, 'skiff_grpc_requests_total', { method: 'PullImage', code: 'OK' }) >= 1);
    assert.ok(value(image, 'skiff_image_pull_bytes_total') > 100_000, 'the busybox image was pulled');
    assert.ok(value(image, 'skiff_image_pull_duration_seconds_count') >= 1);
    assert.ok(value(image, 'process_resident_memory_bytes') > 10_000_000);

    const runtime = pages.get('runtime-svc')!;
    assert.ok(value(runtime, 'skiff_grpc_requests_total', { method: 'RunPodSandbox', code: 'OK' }) >= 1);
    assert.ok(value(runtime, 'skiff_grpc_request_duration_seconds_count', { method: 'CreateContainer' }) >= 1);
    assert.equal(value(runtime, 'skiff_containers', { state: 'running' }), 2, 'the talker and the echo server');
    assert.ok(value(runtime, 'skiff_container_starts_total') >= 1);
    assert.equal(value(runtime, 'skiff_container_oom_kills_total'), 0);
  });

  test('stream sessions, log lines and service restarts', () => {
    const stream = pages.get('stream-svc')!;
    assert.equal(value(stream, 'skiff_stream_sessions_total', { transport: 'websocket', kind: 'exec' }), 1);
    assert.ok(value(stream, 'skiff_stream_sessions_total', { transport: 'websocket', kind: 'portforward' }) >= 1);
    assert.ok(value(stream, 'skiff_stream_port_forward_bytes_total', { direction: 'to_pod' }) >= FORWARDED);
    assert.ok(value(stream, 'skiff_stream_port_forward_bytes_total', { direction: 'from_pod' }) >= FORWARDED);
    const logs = pages.get('logs-svc')!;
    assert.ok(value(logs, 'skiff_logs_lines_total') >= 5);
    assert.ok(value(logs, 'skiff_logs_bytes_total') >= 30);
    assert.ok(value(logs, 'skiff_logs_journal_lag_seconds') >= 0);
    assert.equal(value(logs, 'skiff_logs_journald_suppressed_total'), 0);
    for (const service of SERVICES) assert.equal(value(pages.get(service)!, 'skiff_service_restarts_total', { service }), 0, `${service} was not restarted`);
  });
});

/**
 * runtime-svc's event stream and pod metrics, through `skiff up`:
 *   - exit to event: with N running containers (default 100, 10 per pod), each killed with SIGKILL
 *     in turn; the time from the kill to its CONTAINER_STOPPED_EVENT on a GetContainerEvents
 *     stream, p50/p90/p99, beside the floor: the time from the same kill to conmon's exit file
 *     appearing (inotify, in this process); then the pause process of each of those pods killed
 *     in turn, the time to the pod's CONTAINER_STOPPED_EVENT;
 *   - ListPodSandboxMetrics with P pods (default 100) of one container each, p50/p99 over 30 calls,
 *     beside ListPodSandboxStats in the same run and two floors: reading four of each container's
 *     cgroup files (cpuacct, cpu.stat, memory.stat, memory.usage_in_bytes) and each pod's
 *     /proc/net/dev with fs.promises.readFile; and reading every file the metrics are made of
 *     (twelve per container, and net/dev) with one open and one read each, all at once; beside
 *     the time a grpc-js client spends decoding the same response.
 *
 *   node bench/dist/events-metrics.js [--containers N] [--pods P]
 */
import { close, open, read, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { callUnary, loadCri, type cri } from '@skiff/proto';
import { startRuntimeHarness, type Pod } from '@skiff/e2e/lib';
import { percentile, printTable, ms, timed } from './stats.js';

const PER_POD = 10;
const METRICS_CALLS = 30;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { containers: { type: 'string', default: '100' }, pods: { type: 'string', default: '100' } } });
  const containerCount = Number(values.containers);
  const podCount = Number(values.pods);
  const h = await startRuntimeHarness();
  try {
    // ---- exit to event
    const ids: string[] = [];
    for (let p = 0; ids.length < containerCount; p++) {
      const pod = await h.runPod();
      for (let i = 0; i < PER_POD && ids.length < containerCount; i++) ids.push(await h.runContainer(pod, `sleeper-${i}`));
    }
    const pids = new Map<string, number>();
    for (const id of ids) {
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true });
      pids.set(id, (JSON.parse(info['info']!) as { pid: number }).pid);
    }
    const podIds = [...new Set((await callUnary(h.runtime, 'ListPodSandbox', {})).items.map((p) => p.id))];
    const stopped = new Map<string, number>();
    const stream = h.runtime.GetContainerEvents({});
    stream.on('data', (e: cri.ContainerEventResponse__Output) => {
      if (e.container_event_type === 'CONTAINER_STOPPED_EVENT' && !stopped.has(e.container_id)) stopped.set(e.container_id, performance.now());
    });
    stream.on('error', () => undefined);
    const exitFiles = new Map<string, number>();
    const watcher = watch(join(h.skiff.runDir, 'exits'), (_e, name) => {
      if (name && !exitFiles.has(name.toString())) exitFiles.set(name.toString(), performance.now());
    });
    await new Promise((r) => setTimeout(r, 500));
    const eventLatency: number[] = [];
    const fileLatency: number[] = [];
    for (const id of ids) {
      const killedAt = performance.now();
      process.kill(pids.get(id)!, 'SIGKILL');
      for (const deadline = Date.now() + 30_000; !stopped.has(id) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 1));
      if (stopped.has(id)) eventLatency.push(stopped.get(id)! - killedAt);
      if (exitFiles.has(id)) fileLatency.push(exitFiles.get(id)! - killedAt);
    }
    watcher.close();
    const pauseLatency: number[] = [];
    for (const id of podIds) {
      const { info } = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
      const killedAt = performance.now();
      process.kill((JSON.parse(info['info']!) as { pid: number }).pid, 'SIGKILL');
      for (const deadline = Date.now() + 30_000; !stopped.has(id) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 1));
      if (stopped.has(id)) pauseLatency.push(stopped.get(id)! - killedAt);
    }
    stream.cancel();
    const p3 = (xs: number[]): string => `${ms(percentile(xs, 50))} / ${ms(percentile(xs, 90))} / ${ms(percentile(xs, 99))}`;
    printTable(`Exit to CONTAINER_STOPPED_EVENT, ${ids.length} running containers killed one by one (target p50 < 100 ms)`, [
      ['p50 / p90 / p99', p3(eventLatency)],
      ['floor: kill to conmon exit file (inotify here), p50 / p90 / p99', p3(fileLatency)],
      ['events missing', String(ids.length - eventLatency.length)],
      [`pause process killed, ${podIds.length} pods, to the pod's event, p50 / p90 / p99`, p3(pauseLatency)],
      ['pod events missing', String(podIds.length - pauseLatency.length)],
    ]);
    for (const { id } of (await callUnary(h.runtime, 'ListPodSandbox', {})).items) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, { timeoutMs: 60_000 });

    // ---- pod metrics
    const pods: Pod[] = [];
    const containers: string[] = [];
    for (let p = 0; p < podCount; p++) {
      const pod = await h.runPod();
      pods.push(pod);
      containers.push(await h.runContainer(pod, 'app'));
    }
    const cgroupDirs: string[] = [];
    const pausePids: number[] = [];
    for (const id of containers) {
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true });
      const pid = (JSON.parse(info['info']!) as { pid: number }).pid;
      const memory = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n').find((l) => /:memory:/.test(l))!.split(':')[2]!;
      cgroupDirs.push(memory);
    }
    for (const pod of pods) {
      const { info } = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id, verbose: true });
      pausePids.push((JSON.parse(info['info']!) as { pid: number }).pid);
    }
    const floor = async (): Promise<void> => {
      await Promise.all([
        ...cgroupDirs.flatMap((dir) => [
          readFile(`/sys/fs/cgroup/cpuacct${dir}/cpuacct.usage`, 'utf8').catch(() => ''),
          readFile(`/sys/fs/cgroup/cpu${dir}/cpu.stat`, 'utf8').catch(() => ''),
          readFile(`/sys/fs/cgroup/memory${dir}/memory.stat`, 'utf8').catch(() => ''),
          readFile(`/sys/fs/cgroup/memory${dir}/memory.usage_in_bytes`, 'utf8').catch(() => ''),
        ]),
        ...pausePids.map((pid) => readFile(`/proc/${pid}/net/dev`, 'utf8')),
      ]);
    };
    const v1Files = [
      'cpuacct/cpuacct.usage', 'cpuacct/cpuacct.stat', 'cpu/cpu.stat', 'cpu/cpu.cfs_quota_us', 'cpu/cpu.cfs_period_us', 'cpu/cpu.shares',
      'memory/memory.usage_in_bytes', 'memory/memory.stat', 'memory/memory.limit_in_bytes', 'memory/memory.oom_control', 'pids/pids.current', 'pids/cgroup.procs',
    ];
    const allFiles = [
      ...cgroupDirs.flatMap((dir) => v1Files.map((f) => `/sys/fs/cgroup/${f.split('/')[0]}${dir}/${f.split('/')[1]}`)),
      ...pausePids.map((pid) => `/proc/${pid}/net/dev`),
    ];
    const openAndRead = (path: string): Promise<void> =>
      new Promise((resolve) =>
        open(path, 'r', (err, fd) => {
          if (err) return resolve();
          read(fd, Buffer.allocUnsafe(8192), 0, 8192, null, () => close(fd, () => resolve()));
        }),
      );
    const floorAll = async (): Promise<void> => {
      await Promise.all(allFiles.map(openAndRead));
    };
    const floorAllTimes: number[] = [];
    const metricsTimes: number[] = [];
    const statsTimes: number[] = [];
    const floorTimes: number[] = [];
    for (let i = 0; i < METRICS_CALLS; i++) {
      metricsTimes.push(await timed(() => callUnary(h.runtime, 'ListPodSandboxMetrics', {}, { timeoutMs: 60_000 })));
      statsTimes.push(await timed(() => callUnary(h.runtime, 'ListPodSandboxStats', {}, { timeoutMs: 60_000 })));
      floorTimes.push(await timed(floor));
      floorAllTimes.push(await timed(floorAll));
    }
    // What the client alone spends decoding the same response (protobufjs, as grpc-js clients do).
    const method = loadCri().RuntimeService.service.ListPodSandboxMetrics;
    const wire = method.responseSerialize(await callUnary(h.runtime, 'ListPodSandboxMetrics', {}, { timeoutMs: 60_000 }));
    const decodeTimes: number[] = [];
    for (let i = 0; i < METRICS_CALLS; i++) decodeTimes.push(await timed(async () => method.responseDeserialize(wire)));
    printTable(`ListPodSandboxMetrics with ${podCount} pods, ${METRICS_CALLS} calls (target p50 < 50 ms)`, [
      ['p50 / p99', `${ms(percentile(metricsTimes, 50))} / ${ms(percentile(metricsTimes, 99))}`],
      ['ListPodSandboxStats, same pods, p50 / p99', `${ms(percentile(statsTimes, 50))} / ${ms(percentile(statsTimes, 99))}`],
      ['floor: 4 cgroup files a container and net/dev, fs.promises.readFile, p50', ms(percentile(floorTimes, 50))],
      [`floor: all ${allFiles.length} files the metrics read, one open and one read each, p50`, ms(percentile(floorAllTimes, 50))],
      [`the client's decoding of the ${(wire.length / 1024).toFixed(0)} KiB response alone, p50`, ms(percentile(decodeTimes, 50))],
    ]);
  } finally {
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

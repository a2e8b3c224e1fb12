import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCgroupDetailV2, readCgroupReading } from '../stats/cgroup-detail.js';
import { metricDescriptors, podSandboxMetrics } from './cadvisor-metrics.js';

/** A /proc stand-in under `root`: per pid, its fd directory's links. */
async function fakeProc(root: string, fds: Record<number, string[]>): Promise<string> {
  const proc = join(root, 'proc');
  for (const [pid, targets] of Object.entries(fds)) {
    await fs.mkdir(join(proc, pid, 'fd'), { recursive: true });
    for (const [fd, target] of targets.entries()) await fs.symlink(target, join(proc, pid, 'fd', String(fd)));
  }
  return proc;
}

describe('cAdvisor metrics', () => {
  it('labels each value as described and leaves out what was not read', () => {
    const pod = podSandboxMetrics(
      {
        id: 'pod-id',
        pod: 'web',
        namespace: 'prod',
        interfaces: [{ name: 'eth0', rxBytes: 10, rxPackets: 1, rxErrors: 0, rxDropped: 0, txBytes: 20, txPackets: 2, txErrors: 0, txDropped: 0 }],
        containers: [
          {
            id: 'c-id',
            container: 'app',
            name: 'k8s_app_web',
            image: 'busybox:1',
            sample: { cpuNanos: 2.5e9, pageFaults: 7, swapUsage: 0 },
            detail: { sockets: 2, threadsMax: 0, blockIo: [{ major: 8, minor: 0, readBytes: 4096, writeBytes: 8192, reads: 1, writes: 2 }] },
            layer: { bytes: 4096, inodes: 3, limitBytes: 1e9, inodesFree: 500 },
            startedAt: '1700000000900000000',
            devices: new Map([['8:0', '/dev/sda']]),
          },
        ],
      },
      '1700000005123000000',
    );
    const keys = new Map(metricDescriptors().map((d) => [d.name, d.label_keys]));
    const all = [...pod.metrics!, ...pod.container_metrics![0]!.metrics!];
    for (const m of all) assert.equal(m.label_values!.length, keys.get(m.name!)!.length, m.name);
    const cpu = all.find((m) => m.name === 'container_cpu_usage_seconds_total')!;
    assert.deepEqual([cpu.label_values, cpu.value, cpu.metric_type, cpu.timestamp], [['app', 'c-id', 'busybox:1', 'k8s_app_web', 'prod', 'web'], { value: '2' }, 'COUNTER', '1700000005123000000']);
    const value = (name: string, last?: string): string | undefined => all.find((m) => m.name === name && (last === undefined || m.label_values!.at(-1) === last))?.value?.value?.toString();
    assert.deepEqual(
      ['container_start_time_seconds', 'container_last_seen', 'container_sockets', 'container_threads_max', 'container_fs_limit_bytes', 'container_fs_inodes_free', 'container_spec_memory_swap_limit_bytes'].map((n) => value(n)),
      ['1700000000', '1700000005', '2', '0', '1000000000', '500', '0'],
    );
    assert.deepEqual(all.find((m) => m.name === 'container_fs_writes_total')!.label_values!.slice(6), ['/dev/sda']);
    assert.deepEqual([value('container_fs_writes_total'), value('container_fs_reads_bytes_total')], ['2', '4096']);
    assert.deepEqual(all.find((m) => m.name === 'container_blkio_device_usage_total' && m.label_values!.at(-1) === 'Write')!.label_values!.slice(6), ['/dev/sda', '8', '0', 'Write']);
    assert.equal(value('container_blkio_device_usage_total', 'Write'), '8192');
    assert.equal(all.some((m) => m.name === 'container_memory_failcnt' || m.name === 'container_file_descriptors'), false, 'not read: left out');
    assert.equal(all.filter((m) => m.name === 'container_memory_failures_total').length, 2, 'pgfault in both scopes; pgmajfault was not read');
    assert.equal(all.some((m) => m.name === 'container_memory_rss'), false);
    assert.deepEqual(all.find((m) => m.name === 'container_network_transmit_packets_total')!.label_values, ['', 'pod-id', '', '', 'prod', 'web', 'eth0']);
  });

  it('reads cgroup v2 counters and limits, shares from cpu.weight', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-cg2-'));
    try {
      await fs.writeFile(join(dir, 'cpu.stat'), 'usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\nnr_periods 50\nnr_throttled 5\nthrottled_usec 250000\n');
      await fs.writeFile(join(dir, 'memory.stat'), 'anon 100\nfile 4096\nkernel 2048\nfile_mapped 1024\n');
      await fs.writeFile(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n');
      await fs.writeFile(join(dir, 'memory.peak'), '65536\n');
      await fs.writeFile(join(dir, 'pids.max'), 'max\n');
      await fs.writeFile(join(dir, 'io.stat'), '8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n253:1 rbytes=0 wbytes=512 rios=0 wios=1 dbytes=0 dios=0\n');
      const proc = await fakeProc(dir, { 12: ['/dev/null', 'socket:[77]', 'pipe:[5]'], 13: ['socket:[78]'] });
      await fs.writeFile(join(dir, 'cpu.max'), '50000 100000\n');
      await fs.writeFile(join(dir, 'cpu.weight'), '100\n');
      await fs.writeFile(join(dir, 'cgroup.procs'), '12\n13\n');
      assert.deepEqual(await readCgroupDetailV2(dir, proc), {
        cpuUserNanos: 2e9,
        cpuSystemNanos: 1e9,
        cfsPeriods: 50,
        cfsThrottledPeriods: 5,
        cfsThrottledNanos: 2.5e8,
        cacheBytes: 4096,
        oomKills: 1,
        cpuQuotaMicros: 50000,
        cpuPeriodMicros: 100000,
        cpuShares: 2597,
        processes: 2,
        fileDescriptors: 4,
        sockets: 2,
        threadsMax: 0,
        memoryFailcnt: 2,
        kernelBytes: 2048,
        mappedFileBytes: 1024,
        maxUsageBytes: 65536,
        blockIo: [
          { major: 8, minor: 0, readBytes: 4096, writeBytes: 8192, reads: 1, writes: 2 },
          { major: 253, minor: 1, readBytes: 0, writeBytes: 512, reads: 0, writes: 1 },
        ],
      });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('reads cgroup v1 counters and limits, each file once, the sample and the detail together', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-cg1-'));
    const dir = (controller: string): string => join(root, controller);
    try {
      const files: Record<string, string> = {
        'cpuacct/cpuacct.usage': '2500000000\n',
        'cpuacct/cpuacct.stat': 'user 150\nsystem 50\n',
        'cpu/cpu.stat': 'nr_periods 10\nnr_throttled 2\nthrottled_time 3000000\n',
        'cpu/cpu.cfs_quota_us': '-1\n',
        'cpu/cpu.cfs_period_us': '100000\n',
        'cpu/cpu.shares': '1024\n',
        'memory/memory.usage_in_bytes': '10000\n',
        'memory/memory.limit_in_bytes': '9223372036854771712\n',
        'memory/memory.stat': 'cache 1\ntotal_cache 4096\ntotal_rss 5000\ntotal_inactive_file 1000\ntotal_pgfault 7\ntotal_pgmajfault 1\ntotal_mapped_file 1024\n',
        'memory/memory.failcnt': '5\n',
        'memory/memory.kmem.usage_in_bytes': '2048\n',
        'memory/memory.max_usage_in_bytes': '20000\n',
        'memory/memory.memsw.usage_in_bytes': '10000\n',
        'memory/memory.memsw.limit_in_bytes': '9223372036854771712\n',
        'pids/pids.max': '1024\n',
        'blkio/blkio.throttle.io_service_bytes': '8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Total 12288\nTotal 12288\n',
        'blkio/blkio.throttle.io_serviced': '8:0 Read 1\n8:0 Write 2\n8:0 Total 3\nTotal 3\n',
        'memory/memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n',
        'pids/pids.current': '4\n',
        'pids/cgroup.procs': '1\n2\n',
      };
      for (const [path, text] of Object.entries(files)) {
        await fs.mkdir(join(root, path, '..'), { recursive: true });
        await fs.writeFile(join(root, path), text);
      }
      const proc = await fakeProc(root, { 1: ['socket:[9]'], 2: ['/dev/null', 'anon_inode:[eventfd]'] });
      const dirs = { cgroupV2: false, cpu: dir('cpu'), cpuacct: dir('cpuacct'), memory: dir('memory'), pids: dir('pids'), blkio: dir('blkio') };
      const reading = await readCgroupReading(dirs, undefined, proc);
      assert.deepEqual(reading, {
        sample: { cpuNanos: 2.5e9, memoryUsage: 10000, workingSet: 9000, rss: 5000, pageFaults: 7, majorPageFaults: 1, pids: 4, swapUsage: 0 },
        detail: {
          cpuUserNanos: 1.5e9,
          cpuSystemNanos: 5e8,
          cfsPeriods: 10,
          cfsThrottledPeriods: 2,
          cfsThrottledNanos: 3e6,
          cacheBytes: 4096,
          oomKills: 3,
          cpuPeriodMicros: 100000,
          cpuShares: 1024,
          processes: 2,
          fileDescriptors: 3,
          sockets: 1,
          threadsMax: 1024,
          memoryFailcnt: 5,
          kernelBytes: 2048,
          mappedFileBytes: 1024,
          maxUsageBytes: 20000,
          blockIo: [{ major: 8, minor: 0, readBytes: 4096, writeBytes: 8192, reads: 1, writes: 2 }],
        },
      });
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});

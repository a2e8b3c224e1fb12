import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCgroupDetailV2, readCgroupReading } from '../stats/cgroup-detail.js';
import { metricDescriptors, podSandboxMetrics } from './cadvisor-metrics.js';

describe('cAdvisor metrics', () => {
  it('labels each value as described and leaves out what was not read', () => {
    const pod = podSandboxMetrics(
      {
        id: 'pod-id',
        pod: 'web',
        namespace: 'prod',
        interfaces: [{ name: 'eth0', rxBytes: 10, rxPackets: 1, rxErrors: 0, rxDropped: 0, txBytes: 20, txPackets: 2, txErrors: 0, txDropped: 0 }],
        containers: [{ id: 'c-id', container: 'app', name: 'k8s_app_web', image: 'busybox:1', sample: { cpuNanos: 2.5e9, pageFaults: 7 }, detail: {}, layer: { bytes: 4096, inodes: 3 } }],
      },
      '123',
    );
    const keys = new Map(metricDescriptors().map((d) => [d.name, d.label_keys]));
    const all = [...pod.metrics!, ...pod.container_metrics![0]!.metrics!];
    for (const m of all) assert.equal(m.label_values!.length, keys.get(m.name!)!.length, m.name);
    const cpu = all.find((m) => m.name === 'container_cpu_usage_seconds_total')!;
    assert.deepEqual([cpu.label_values, cpu.value, cpu.metric_type, cpu.timestamp], [['app', 'c-id', 'busybox:1', 'k8s_app_web', 'prod', 'web'], { value: '2' }, 'COUNTER', '123']);
    assert.equal(all.filter((m) => m.name === 'container_memory_failures_total').length, 2, 'pgfault in both scopes; pgmajfault was not read');
    assert.equal(all.some((m) => m.name === 'container_memory_rss'), false);
    assert.deepEqual(all.find((m) => m.name === 'container_network_transmit_packets_total')!.label_values, ['', 'pod-id', '', '', 'prod', 'web', 'eth0']);
  });

  it('reads cgroup v2 counters and limits, shares from cpu.weight', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-cg2-'));
    try {
      await fs.writeFile(join(dir, 'cpu.stat'), 'usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\nnr_periods 50\nnr_throttled 5\nthrottled_usec 250000\n');
      await fs.writeFile(join(dir, 'memory.stat'), 'anon 100\nfile 4096\n');
      await fs.writeFile(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n');
      await fs.writeFile(join(dir, 'cpu.max'), '50000 100000\n');
      await fs.writeFile(join(dir, 'cpu.weight'), '100\n');
      await fs.writeFile(join(dir, 'cgroup.procs'), '12\n13\n');
      assert.deepEqual(await readCgroupDetailV2(dir), {
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
        'memory/memory.stat': 'cache 1\ntotal_cache 4096\ntotal_rss 5000\ntotal_inactive_file 1000\ntotal_pgfault 7\ntotal_pgmajfault 1\n',
        'memory/memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n',
        'pids/pids.current': '4\n',
        'pids/cgroup.procs': '1\n2\n',
      };
      for (const [path, text] of Object.entries(files)) {
        await fs.mkdir(join(root, path, '..'), { recursive: true });
        await fs.writeFile(join(root, path), text);
      }
      const reading = await readCgroupReading({ cgroupV2: false, cpu: dir('cpu'), cpuacct: dir('cpuacct'), memory: dir('memory'), pids: dir('pids') });
      assert.deepEqual(reading, {
        sample: { cpuNanos: 2.5e9, memoryUsage: 10000, workingSet: 9000, rss: 5000, pageFaults: 7, majorPageFaults: 1, pids: 4 },
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
        },
      });
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});

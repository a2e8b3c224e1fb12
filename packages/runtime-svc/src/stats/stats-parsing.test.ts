import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseFlatKeyed, parsePressure, sampleFromTexts, sumSamples, type SampleTexts } from './cgroup-stats.js';
import { CpuRates } from './cpu-rate.js';
import { parseNetDev } from './net-dev.js';

const NO_TEXTS: SampleTexts = {
  cgroupV2: false,
  cpu: undefined,
  memoryUsage: undefined,
  memoryStat: undefined,
  memoryLimit: undefined,
  pidsCurrent: undefined,
  swapUsage: undefined,
  swapLimit: undefined,
  cpuPressure: undefined,
  memoryPressure: undefined,
  ioPressure: undefined,
};

describe('stats parsing', () => {
  it('reads flat-keyed files and sums samples', () => {
    const m = parseFlatKeyed('total_rss 100\ntotal_inactive_file 7\nbad\nhierarchical_memory_limit 9223372036854771712\n');
    assert.equal(m.get('total_rss'), 100);
    assert.equal(m.has('bad'), false);
    assert.deepEqual(sumSamples([{ cpuNanos: 1, pids: 2 }, { cpuNanos: 3 }, {}]), { cpuNanos: 4, pids: 2 });
  });
  it('reads interface counters without loopback', () => {
    const text = [
      'Inter-|   Receive                                                |  Transmit',
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
      '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
      '  eth0:    1234      10    2    0    0     0          0         0     5678      20    3    0    0     0       0          0',
    ].join('\n');
    assert.deepEqual(parseNetDev(text), [
      { name: 'eth0', rxBytes: 1234, rxPackets: 10, rxErrors: 2, rxDropped: 0, txBytes: 5678, txPackets: 20, txErrors: 3, txDropped: 0 },
    ]);
  });

  it('reads pressure stall files, totals in nanoseconds', () => {
    // io.pressure of this machine's unified hierarchy (a hybrid cgroup v1 host), as recorded.
    assert.deepEqual(parsePressure('some avg10=59.65 avg60=68.28 avg300=32.47 total=138061233\nfull avg10=12.16 avg60=14.67 avg300=6.48 total=29408945\n'), {
      some: { totalNanos: 138061233000, avg10: 59.65, avg60: 68.28, avg300: 32.47 },
      full: { totalNanos: 29408945000, avg10: 12.16, avg60: 14.67, avg300: 6.48 },
    });
    assert.deepEqual(parsePressure('some avg10=0.00 avg60=0.00 avg300=0.00 total=10598\n'), { some: { totalNanos: 10598000, avg10: 0, avg60: 0, avg300: 0 } });
    assert.equal(parsePressure(undefined), undefined);
    assert.equal(parsePressure('some avg10=x\n'), undefined);
  });

  it('reads swap and pressure of a cgroup v1 container (memsw counts memory and swap together)', () => {
    const texts: SampleTexts = {
      ...NO_TEXTS,
      memoryUsage: '76038144\n',
      memoryStat: 'total_inactive_file 1000\n',
      memoryLimit: '268435456\n',
      swapUsage: '76070912\n',
      swapLimit: '536870912\n',
      cpuPressure: 'some avg10=1.50 avg60=0.40 avg300=0.10 total=2000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n',
    };
    const sample = sampleFromTexts(texts);
    assert.equal(sample.swapUsage, 32768);
    assert.equal(sample.swapLimit, 268435456, 'the memory+swap limit less the memory limit');
    assert.deepEqual(sample.cpuPressure?.some, { totalNanos: 2_000_000, avg10: 1.5, avg60: 0.4, avg300: 0.1 });
    assert.equal(sample.ioPressure, undefined);
    // As recorded on this machine: the two counters read a moment apart, memsw below usage.
    const unlimited = sampleFromTexts({ ...texts, swapUsage: '75980800\n', memoryLimit: '9223372036854771712\n', swapLimit: '9223372036854771712\n' });
    assert.equal(unlimited.swapUsage, 0);
    assert.equal(unlimited.swapLimit, undefined);
    assert.equal(sampleFromTexts({ ...texts, swapUsage: undefined }).swapUsage, undefined, 'no swap accounting: unknown, not 0');
  });

  it('reads swap and pressure of a cgroup v2 container', () => {
    const v2: SampleTexts = {
      ...NO_TEXTS,
      cgroupV2: true,
      cpu: 'usage_usec 3000000\n',
      memoryUsage: '10485760\n',
      memoryStat: 'anon 4096\ninactive_file 0\n',
      memoryLimit: 'max\n',
      swapUsage: '8192\n',
      swapLimit: 'max\n',
      memoryPressure: 'some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n',
      ioPressure: 'some avg10=2.00 avg60=1.00 avg300=0.50 total=900\nfull avg10=1.00 avg60=0.50 avg300=0.25 total=400\n',
    };
    const sample = sampleFromTexts(v2);
    assert.deepEqual([sample.cpuNanos, sample.swapUsage, sample.swapLimit], [3e9, 8192, undefined]);
    assert.equal(sampleFromTexts({ ...v2, swapLimit: '1048576\n' }).swapLimit, 1048576);
    assert.equal(sample.memoryPressure?.full?.totalNanos, 3000);
    assert.equal(sample.ioPressure?.some?.avg300, 0.5);
  });

  it('measures CPU rates over at least a second, whoever reads in between', () => {
    const rates = new CpuRates();
    const s = 1_000_000_000n;
    assert.equal(rates.rate('c', 10n * s, 5e9), undefined, 'one reading is no rate');
    assert.equal(rates.rate('c', 10n * s + 3_000_000n, 5e9), undefined, 'nor are two a few milliseconds apart');
    assert.equal(rates.rate('c', 12n * s, 6e9), 0.5e9, 'half a core over two seconds');
    assert.equal(rates.rate('c', 12n * s + 2_000_000n, 6e9), 0.5e9, 'a reading right after repeats the last full window');
    assert.equal(rates.rate('c', 12n * s + 500_000_000n, 6.5e9), 0.5e9);
    assert.equal(rates.rate('c', 13n * s, 7.5e9), 1.5e9, 'the next window starts where the last full one ended');
    assert.equal(rates.rate('c', 14n * s, 1e9), undefined, 'a counter that went back starts again');
    assert.equal(rates.rate('c', 15n * s, 2e9), 1e9);
    rates.forget('c');
    assert.equal(rates.rate('c', 16n * s, 3e9), undefined);
  });
});

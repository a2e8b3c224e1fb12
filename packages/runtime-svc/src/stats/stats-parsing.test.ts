import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseFlatKeyed, sumSamples } from './cgroup-stats.js';
import { parseNetDev } from './net-dev.js';

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
});

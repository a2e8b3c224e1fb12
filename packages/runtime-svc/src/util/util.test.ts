import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePodCidrs } from '../daemon/network-settings.js';
import { hasDnsSettings, renderHosts, renderResolvConf } from '../sandbox/pod-files.js';
import { parseFlatKeyed, sumSamples } from '../stats/cgroup-stats.js';
import { parseNetDev } from '../stats/net-dev.js';
import { cgroupsPathFor, parseProcCgroup, systemdSlice } from './cgroups.js';
import { diskUsage } from './disk-usage.js';
import { matchesLabels } from './label-selector.js';
import { readFileInRoot, resolveInRoot } from './secure-path.js';
import { compareNanos } from './time.js';

describe('label selectors', () => {
  it('needs every selector entry to match exactly', () => {
    const labels = { app: 'web', tier: 'front' };
    assert.equal(matchesLabels(labels, {}), true);
    assert.equal(matchesLabels(labels, null), true);
    assert.equal(matchesLabels(labels, { app: 'web' }), true);
    assert.equal(matchesLabels(labels, { app: 'web', tier: 'front' }), true);
    assert.equal(matchesLabels(labels, { app: 'web', tier: 'back' }), false);
    assert.equal(matchesLabels(labels, { missing: '' }), false);
  });
});

describe('cgroup paths', () => {
  it('places containers under their parent with cgroupfs', () => {
    assert.equal(cgroupsPathFor('cgroupfs', '/kubepods/burstable/pod1', 'abc'), '/kubepods/burstable/pod1/abc');
    assert.equal(cgroupsPathFor('cgroupfs', 'skiff/', 'abc'), '/skiff/abc');
    assert.equal(cgroupsPathFor('cgroupfs', '', 'abc'), '/abc');
  });
  it('uses slice:prefix:name with systemd', () => {
    assert.equal(cgroupsPathFor('systemd', 'kubepods-burstable-pod1.slice', 'abc'), 'kubepods-burstable-pod1.slice:skiff:abc');
    assert.equal(systemdSlice('/kubepods.slice/kubepods-besteffort.slice'), 'kubepods-besteffort.slice');
    assert.equal(systemdSlice('/skiff'), 'skiff.slice');
    assert.equal(systemdSlice('/a/b'), 'a-b.slice');
    assert.equal(systemdSlice(''), '-.slice');
  });
  it('reads /proc/<pid>/cgroup for v1 and v2', () => {
    const map = parseProcCgroup('12:pids:/skiff/x\n4:cpu,cpuacct:/skiff/x\n1:name=systemd:/user.slice\n0::/skiff/x\n');
    assert.equal(map.get('pids'), '/skiff/x');
    assert.equal(map.get('cpuacct'), '/skiff/x');
    assert.equal(map.get(''), '/skiff/x');
    assert.equal(map.has('name=systemd'), false);
  });
});

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
    assert.deepEqual(parseNetDev(text), [{ name: 'eth0', rxBytes: 1234, rxErrors: 2, txBytes: 5678, txErrors: 3 }]);
  });
});

describe('pod files', () => {
  it('renders resolv.conf from DNS settings', () => {
    const dns = { servers: ['10.96.0.10', '1.1.1.1'], searches: ['default.svc.cluster.local', 'svc.cluster.local'], options: ['ndots:5'] };
    assert.equal(renderResolvConf(dns), 'search default.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5\n');
    assert.equal(hasDnsSettings({ servers: [], searches: [], options: [] }), false);
  });
  it('renders /etc/hosts with the pod addresses', () => {
    const hosts = renderHosts('web-0', [{ ip: '10.88.0.5', cidr: '10.88.0.5/16', family: 4 }]);
    assert.match(hosts, /^127\.0\.0\.1\tlocalhost$/m);
    assert.match(hosts, /^10\.88\.0\.5\tweb-0$/m);
  });
});

describe('pod CIDR', () => {
  it('accepts single and dual-stack CIDRs and refuses others', () => {
    assert.deepEqual(parsePodCidrs('10.244.1.0/24'), ['10.244.1.0/24']);
    assert.deepEqual(parsePodCidrs('10.244.1.0/24, fd00:1::/64'), ['10.244.1.0/24', 'fd00:1::/64']);
    assert.deepEqual(parsePodCidrs(''), []);
    for (const bad of ['10.0.0.0', '10.0.0.0/33', 'x/8', '10.0.0.0/8/1', 'fd00::/129']) assert.throws(() => parsePodCidrs(bad), /not a CIDR/, bad);
  });
});

describe('paths inside a container root', () => {
  it('follows symlinks without leaving the root', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-root-'));
    try {
      await fs.mkdir(join(root, 'etc'));
      await fs.mkdir(join(root, 'data'));
      await fs.writeFile(join(root, 'data', 'passwd'), 'inside\n');
      await fs.symlink('/data/passwd', join(root, 'etc', 'passwd'));
      await fs.symlink('../../../../../../etc/hostname', join(root, 'etc', 'escape'));
      await fs.symlink('loop', join(root, 'loop'));
      assert.equal(await readFileInRoot(root, '/etc/passwd'), 'inside\n');
      assert.equal(await resolveInRoot(root, '/etc/escape'), join(root, 'etc', 'hostname'));
      assert.equal(await readFileInRoot(root, '/etc/escape'), undefined);
      assert.equal(await readFileInRoot(root, '/missing/file'), undefined);
      await assert.rejects(resolveInRoot(root, '/loop'), /too many symbolic links/);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('measures disk usage with hard links once', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'skiff-du-'));
    try {
      await fs.writeFile(join(root, 'a'), Buffer.alloc(10_000));
      await fs.link(join(root, 'a'), join(root, 'b'));
      await fs.mkdir(join(root, 'd'));
      const usage = await diskUsage(root);
      assert.equal(usage.inodes, 2);
      assert.ok(usage.bytes >= 10_000);
      assert.deepEqual(await diskUsage(join(root, 'missing')), { bytes: 0, inodes: 0 });
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('compares nanosecond timestamps beyond double precision', () => {
    assert.equal(compareNanos('1700000000000000001', '1700000000000000002'), -1);
    assert.equal(compareNanos('5', '5'), 0);
  });
});

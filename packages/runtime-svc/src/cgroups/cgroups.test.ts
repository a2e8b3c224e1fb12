import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cgroupsPathFor, parseProcCgroup, systemdSlice } from './cgroups.js';

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

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bindSourcesOf, withIdMappings } from './idmapped.js';

const mappings = { uid: { containerID: 0, hostID: 1 << 20, size: 65536 }, gid: { containerID: 0, hostID: 2 << 20, size: 65536 } };

describe('id-mapped binds', () => {
  it("gives every bind but the skipped ones the pod's mappings, recursively, for the runtime to apply", () => {
    const mounts = [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid'] },
      { destination: '/data', type: 'bind', source: '/host/data', options: ['rbind', 'rprivate', 'rw'] },
      { destination: '/vol', type: 'bind', source: '/c/image-volumes/0', options: ['rbind', 'ro'] },
    ];
    const skip = (source: string): boolean => source.startsWith('/c/image-volumes/');
    assert.deepEqual(withIdMappings(mounts, mappings, skip), [
      mounts[0],
      { destination: '/data', type: 'bind', source: '/host/data', options: ['rbind', 'rprivate', 'rw', 'ridmap'], uidMappings: [mappings.uid], gidMappings: [mappings.gid] },
      mounts[2],
    ]);
    assert.deepEqual(bindSourcesOf(mounts, skip), ['/host/data']);
  });
});

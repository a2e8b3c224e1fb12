import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nriMessageType, type nri } from '@skiff/proto';
import type { Spec } from '../oci/runtime-spec.js';
import { NriConflictError, NriUnsupportedError, emptyAdjustment, mergeAdjustment } from './adjustment-merge.js';
import { applyAdjustment } from './spec-adjust.js';
import { nriAdjustment, nriOwners } from './nri-messages.js';

const AdjustmentType = nriMessageType('ContainerAdjustment');

/** An adjustment as a plugin's reply decodes: every field present. */
function adjustment(value: nri.ContainerAdjustment): nri.ContainerAdjustment__Output {
  const bytes = AdjustmentType.encode(AdjustmentType.fromObject(value)).finish();
  return AdjustmentType.toObject(AdjustmentType.decode(bytes), { longs: String, enums: String, defaults: true, oneofs: true }) as nri.ContainerAdjustment__Output;
}

function baseSpec(): Spec {
  return {
    ociVersion: '1.2.0',
    process: { user: { uid: 0, gid: 0 }, args: ['/bin/sh'], env: ['PATH=/bin', 'KEEP=1', 'DROP=1'], cwd: '/', rlimits: [{ type: 'RLIMIT_NOFILE', hard: 1024, soft: 1024 }] },
    root: { path: '/rootfs' },
    mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }, { destination: '/data', type: 'bind', source: '/old' }],
    annotations: { keep: 'a', drop: 'b' },
    linux: { namespaces: [{ type: 'pid' }, { type: 'mount' }], resources: { memory: { limit: 100 } } },
  } as Spec;
}

test('adjustments of several plugins merge in order and land in the spec', () => {
  const merged = emptyAdjustment();
  mergeAdjustment(merged, '10-first', 'c1', adjustment({
    annotations: { added: 'x', '-drop': '' },
    env: [{ key: 'NEW', value: 'v' }, { key: '-DROP' }],
    mounts: [{ destination: '/data', type: 'bind', source: '/new', options: ['rbind', 'ro'] }],
    rlimits: [{ type: 'RLIMIT_NOFILE', hard: 4096, soft: 2048 }],
    hooks: { prestart: [{ path: '/bin/hook', args: ['hook', 'a'], timeout: { value: 5 } }] },
  }));
  mergeAdjustment(merged, '20-second', 'c1', adjustment({
    hooks: { prestart: [{ path: '/bin/other' }] },
    linux: {
      devices: [{ path: '/dev/fake', type: 'c', major: 1, minor: 3, file_mode: { value: 0o666 } }],
      resources: { memory: { limit: { value: 1 << 30 } }, cpu: { shares: { value: 512 }, cpus: '0' }, pids: { limit: 99 } },
      oom_score_adj: { value: 500 },
      cgroups_path: '/custom/c1',
    },
  }));
  const spec = baseSpec();
  applyAdjustment(spec, merged, { name: 'runc', kind: 'oci' });
  assert.deepEqual(spec.annotations, { keep: 'a', added: 'x' });
  assert.deepEqual(spec.process.env, ['PATH=/bin', 'KEEP=1', 'NEW=v']);
  assert.deepEqual(spec.mounts.find((m) => m.destination === '/data'), { destination: '/data', type: 'bind', source: '/new', options: ['rbind', 'ro'] });
  assert.deepEqual(spec.process.rlimits, [{ type: 'RLIMIT_NOFILE', hard: 4096, soft: 2048 }]);
  assert.deepEqual(spec.hooks?.prestart, [{ path: '/bin/hook', args: ['hook', 'a'], timeout: 5 }, { path: '/bin/other' }]);
  assert.deepEqual(spec.linux.devices, [{ type: 'c', path: '/dev/fake', major: 1, minor: 3, fileMode: 0o666 }]);
  assert.deepEqual(spec.linux.resources?.devices, [{ allow: true, type: 'c', major: 1, minor: 3, access: 'rwm' }]);
  assert.equal(spec.linux.resources?.memory?.limit, 1 << 30);
  assert.deepEqual(spec.linux.resources?.cpu, { shares: 512, cpus: '0' });
  assert.deepEqual(spec.linux.resources?.pids, { limit: 99 });
  assert.equal(spec.process.oomScoreAdj, 500);
  assert.equal(spec.linux.cgroupsPath, '/custom/c1');
});

test('two plugins adjusting the same thing are refused, naming both', () => {
  for (const [first, second, what] of [
    [{ annotations: { a: '1' } }, { annotations: { a: '2' } }, 'annotation a'],
    [{ env: [{ key: 'X', value: '1' }] }, { env: [{ key: '-X' }] }, 'environment variable X'],
    [{ linux: { resources: { memory: { limit: { value: 1 } } } } }, { linux: { resources: { memory: { limit: { value: 2 } } } } }, 'memory limit'],
    [{ linux: { oom_score_adj: { value: 1 } } }, { linux: { oom_score_adj: { value: 2 } } }, 'OOM score adjustment'],
    [{ rlimits: [{ type: 'RLIMIT_CORE' }] }, { rlimits: [{ type: 'RLIMIT_CORE' }] }, 'rlimit RLIMIT_CORE'],
    [{ linux: { devices: [{ path: '/dev/x', type: 'c' }] } }, { linux: { devices: [{ path: '/dev/x', type: 'c' }] } }, 'device /dev/x'],
  ] as [nri.ContainerAdjustment, nri.ContainerAdjustment, string][]) {
    const merged = emptyAdjustment();
    mergeAdjustment(merged, '10-a', 'c1', adjustment(first));
    assert.throws(
      () => mergeAdjustment(merged, '20-b', 'c1', adjustment(second)),
      (err: Error) => err instanceof NriConflictError && err.message.includes('"10-a" and "20-b"') && err.message.includes(what),
      what,
    );
  }
});

test('one plugin may set the same thing twice; hooks of several plugins add up', () => {
  const merged = emptyAdjustment();
  mergeAdjustment(merged, '10-a', 'c1', adjustment({ annotations: { a: '1' } }));
  mergeAdjustment(merged, '10-a', 'c1', adjustment({ annotations: { a: '2' } }));
  assert.equal(merged.annotations.get('a'), '2');
});

test('what Skiff does not apply is refused, not dropped', () => {
  assert.throws(() => mergeAdjustment(emptyAdjustment(), '10-a', 'c1', adjustment({ linux: { scheduler: { nice: 5 } } })), NriUnsupportedError);
  assert.throws(() => mergeAdjustment(emptyAdjustment(), '10-a', 'c1', adjustment({ CDI_devices: [{ name: 'vendor.com/x=y' }] })), NriUnsupportedError);
});

test('under a sandbox handler devices and hooks are refused, annotations and env pass', () => {
  const devices = emptyAdjustment();
  mergeAdjustment(devices, '10-inject', 'c1', adjustment({ linux: { devices: [{ path: '/dev/x', type: 'c' }] } }));
  assert.throws(() => applyAdjustment(baseSpec(), devices, { name: 'runsc', kind: 'sandbox' }), /"10-inject" adjusts the devices of a container of handler "runsc"/);
  const env = emptyAdjustment();
  mergeAdjustment(env, '10-env', 'c1', adjustment({ env: [{ key: 'A', value: 'b' }] }));
  const spec = baseSpec();
  applyAdjustment(spec, env, { name: 'runsc', kind: 'sandbox' });
  assert.ok(spec.process.env.includes('A=b'));
});

test('validators see the merged adjustment, resources included, and who made what', () => {
  const merged = emptyAdjustment();
  mergeAdjustment(merged, '10-a', 'c1', adjustment({ env: [{ key: '-X' }], hooks: { poststop: [{ path: '/bin/true' }] } }));
  mergeAdjustment(merged, '20-b', 'c1', adjustment({ linux: { resources: { memory: { limit: { value: 1 << 20 } }, cpu: { cpus: '1' } } } }));
  const seen = nriAdjustment(merged);
  assert.deepEqual(seen.env, [{ key: '-X', value: '' }]);
  assert.deepEqual(seen.linux?.resources?.memory?.limit, { value: 1 << 20 });
  assert.equal(seen.linux?.resources?.cpu?.cpus, '1');
  const owners = nriOwners('c1', merged).owners?.['c1'];
  assert.equal(owners?.simple?.[3], '10-a');
  assert.equal(owners?.simple?.[8], '20-b');
  assert.deepEqual(owners?.compound?.[6], { owners: { X: '10-a' } });
});

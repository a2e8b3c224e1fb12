import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import { bindMountsOf } from './container-mounts.js';

function mount(fields: Partial<cri.Mount__Output>): cri.Mount__Output {
  return {
    container_path: '/data',
    host_path: '/srv/data',
    readonly: false,
    selinux_relabel: false,
    propagation: 'PROPAGATION_PRIVATE',
    uidMappings: [],
    gidMappings: [],
    recursive_read_only: false,
    image: null,
    image_sub_path: '',
    mount_options: [],
    ...fields,
  } as cri.Mount__Output;
}

describe('mount_options against the mount it is given for', () => {
  it('refuses an option that undoes what the mount asks for, naming the option and the field', () => {
    const cases: [Partial<cri.Mount__Output>, string][] = [
      [{ readonly: true, mount_options: ['rw'] }, 'mount /data: mount_options "rw" contradicts readonly: true: it would make the mount writable'],
      [{ readonly: true, mount_options: ['nosuid', 'ro', 'rw'] }, 'mount /data: mount_options "rw" contradicts readonly: true: it would make the mount writable'],
      [{ readonly: true, recursive_read_only: true, mount_options: ['rw'] }, 'mount /data: mount_options "rw" contradicts recursive_read_only: true: it would make the mount writable'],
      [{ host_path: '', image: { image: 'busybox' } as cri.ImageSpec__Output, mount_options: ['rw'] }, 'mount /data: mount_options "rw" contradicts image (an image volume is read-only): it would make the mount writable'],
    ];
    for (const [fields, message] of cases) {
      assert.throws(() => bindMountsOf([mount(fields)]), (err: unknown) => err instanceof StatusError && err.code === status.INVALID_ARGUMENT && err.message === message);
    }
  });

  it('takes options that agree with the request or add to it', () => {
    assert.deepEqual(bindMountsOf([mount({ readonly: true, mount_options: ['ro', 'noexec'] })])[0]?.options, ['ro', 'noexec']);
    assert.deepEqual(bindMountsOf([mount({ mount_options: ['rw', 'nodev'] })])[0]?.options, ['rw', 'nodev']);
    assert.deepEqual(bindMountsOf([mount({ mount_options: ['ro'] })])[0]?.options, ['ro']);
  });
});

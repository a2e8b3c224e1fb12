import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyCdiEdits, collectCdiEdits, requestedCdiDevices } from './cdi-edits.js';
import { CdiRegistry } from './cdi-registry.js';
import { CdiError, parseCdiSpec, parseQualifiedName } from './cdi-spec.js';

const GPU_SPEC = {
  cdiVersion: '0.6.0',
  kind: 'example.com/gpu',
  devices: [
    { name: 'gpu0', containerEdits: { env: ['GPU=0'], deviceNodes: [{ path: '/dev/gpu0', type: 'c', major: 1, minor: 3, permissions: 'rw' }] } },
    { name: 'gpu1', containerEdits: { env: ['GPU=1'] } },
  ],
  containerEdits: { env: ['VENDOR=example'], mounts: [{ hostPath: '/opt/lib', containerPath: '/usr/lib/gpu', options: ['ro', 'nosuid', 'bind'] }], hooks: [{ hookName: 'createContainer', path: '/bin/true', args: ['true', 'x'] }], additionalGids: [44] },
};

async function withDirs(run: (dirs: [string, string]) => Promise<void>): Promise<void> {
  const base = await fs.mkdtemp(join(tmpdir(), 'skiff-cdi-'));
  const dirs: [string, string] = [join(base, 'etc'), join(base, 'run')];
  await Promise.all(dirs.map((d) => fs.mkdir(d)));
  try {
    await run(dirs);
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

describe('CDI spec files', () => {
  it('parses JSON and YAML of the versions in use, and names what is wrong', async () => {
    assert.equal((await parseCdiSpec(JSON.stringify(GPU_SPEC), false)).devices.length, 2);
    const yaml = 'cdiVersion: "0.8.0"\nkind: example.com/net\ndevices:\n  - name: eth\n    containerEdits:\n      env: ["NET=1"]\n';
    assert.deepEqual((await parseCdiSpec(yaml, true)).devices[0], { name: 'eth', containerEdits: { env: ['NET=1'] } });
    await assert.rejects(parseCdiSpec('{', false), /not valid JSON/);
    await assert.rejects(parseCdiSpec(JSON.stringify({ ...GPU_SPEC, cdiVersion: '9.0.0' }), false), /cdiVersion "9.0.0"/);
    await assert.rejects(parseCdiSpec(JSON.stringify({ ...GPU_SPEC, kind: 'nokind' }), false), /vendor.com\/class/);
    await assert.rejects(parseCdiSpec(JSON.stringify({ ...GPU_SPEC, devices: [{ name: 'a', containerEdits: { deviceNodes: [{ path: 'rel' }] } }] }), false), /deviceNodes\[0\].path must be an absolute path/);
    await assert.rejects(parseCdiSpec(JSON.stringify({ ...GPU_SPEC, devices: [GPU_SPEC.devices[0], GPU_SPEC.devices[0]] }), false), /defined twice/);
  });

  it('checks fully qualified device names', () => {
    assert.deepEqual(parseQualifiedName('example.com/gpu=gpu0'), { kind: 'example.com/gpu', name: 'gpu0' });
    for (const bad of ['gpu0', 'example.com/gpu', '/gpu=x', 'example.com/gpu=', 'example.com/../x=y', 'a/b=c/d']) assert.equal(parseQualifiedName(bad), undefined, bad);
  });

  it('takes devices from the field and the cdi.k8s.io annotations, once each', () => {
    const names = requestedCdiDevices({ CDI_devices: [{ name: 'a.com/x=1' }], annotations: { 'cdi.k8s.io/one': 'a.com/x=1, a.com/x=2', other: 'b.com/y=3' } });
    assert.deepEqual(names, ['a.com/x=1', 'a.com/x=2']);
  });
});

describe('CDI registry', () => {
  it('a later directory overrides an earlier one; two specs of one directory conflict; changes are seen', async () => {
    await withDirs(async ([etc, run]) => {
      const registry = new CdiRegistry([etc, run]);
      await fs.writeFile(join(etc, 'gpu.json'), JSON.stringify(GPU_SPEC));
      assert.deepEqual((await registry.resolve(['example.com/gpu=gpu1']))[0]!.deviceEdits, { env: ['GPU=1'] });

      await fs.writeFile(join(run, 'gpu.yaml'), 'cdiVersion: "0.6.0"\nkind: example.com/gpu\ndevices:\n  - name: gpu1\n    containerEdits:\n      env: ["GPU=run"]\n');
      const over = (await registry.resolve(['example.com/gpu=gpu1']))[0]!;
      assert.deepEqual([over.file, over.deviceEdits], [join(run, 'gpu.yaml'), { env: ['GPU=run'] }]);

      await fs.writeFile(join(run, 'again.json'), JSON.stringify({ cdiVersion: '0.6.0', kind: 'example.com/gpu', devices: [{ name: 'gpu1', containerEdits: {} }] }));
      await assert.rejects(registry.resolve(['example.com/gpu=gpu1']), /"example.com\/gpu=gpu1" is defined by both .*again.json and .*gpu.yaml/);
      await fs.rm(join(run, 'again.json'));

      await fs.writeFile(join(run, 'gpu.yaml'), 'cdiVersion: "0.6.0"\nkind: example.com/gpu\ndevices:\n  - name: gpu1\n    containerEdits:\n      env: ["GPU=changed"]\n');
      assert.deepEqual((await registry.resolve(['example.com/gpu=gpu1']))[0]!.deviceEdits, { env: ['GPU=changed'] });
    });
  });

  it("reads only specs that are root's alone, opened as they are; a refusal names the file and is warned about once", async () => {
    await withDirs(async ([etc, run]) => {
      const warnings: string[] = [];
      const registry = new CdiRegistry([etc, run], { warn: (_fields: object, message: string) => warnings.push(message) } as never);
      const spec = (device: string) => JSON.stringify({ cdiVersion: '0.6.0', kind: 'example.com/gpu', devices: [{ name: device, containerEdits: { env: [`GPU=${device}`] } }] });
      const refusal = (device: string, file: string, why: string) => (err: unknown) =>
        err instanceof CdiError && err.message.includes(`"example.com/gpu=${device}" is not defined`) && err.message.includes(`${file}: ${why}`);

      await fs.writeFile(join(etc, 'owned.json'), spec('owned'));
      await fs.chown(join(etc, 'owned.json'), 65534, 0);
      await assert.rejects(registry.resolve(['example.com/gpu=owned']), refusal('owned', join(etc, 'owned.json'), "refused: owned by uid 65534, not root; CDI specs must be root's alone"));
      await fs.chown(join(etc, 'owned.json'), 0, 0);
      assert.equal((await registry.resolve(['example.com/gpu=owned']))[0]!.file, join(etc, 'owned.json'), 'a chown is seen at once');

      await fs.writeFile(join(etc, 'group.json'), spec('group'), { mode: 0o664 });
      await fs.chmod(join(etc, 'group.json'), 0o664);
      await assert.rejects(registry.resolve(['example.com/gpu=group']), refusal('group', join(etc, 'group.json'), 'refused: writable by its group (mode 0664)'));
      await fs.writeFile(join(etc, 'others.yaml'), spec('others'));
      await fs.chmod(join(etc, 'others.yaml'), 0o646);
      await assert.rejects(registry.resolve(['example.com/gpu=others']), refusal('others', join(etc, 'others.yaml'), 'refused: writable by others (mode 0646)'));

      const elsewhere = join(etc, '..', 'elsewhere.json');
      await fs.writeFile(elsewhere, spec('linked'));
      await fs.symlink(elsewhere, join(run, 'linked.json'));
      await assert.rejects(registry.resolve(['example.com/gpu=linked']), refusal('linked', join(run, 'linked.json'), 'refused: a symbolic link'));

      // A device defined in a file that is fine still resolves beside the refused ones.
      assert.equal((await registry.resolve(['example.com/gpu=owned'])).length, 1);
      assert.deepEqual(warnings.sort(), [
        `CDI: ${join(etc, 'group.json')} is not used: refused: writable by its group (mode 0664); CDI specs must be root's alone`,
        `CDI: ${join(etc, 'others.yaml')} is not used: refused: writable by others (mode 0646); CDI specs must be root's alone`,
        `CDI: ${join(etc, 'owned.json')} is not used: refused: owned by uid 65534, not root; CDI specs must be root's alone`,
        `CDI: ${join(run, 'linked.json')} is not used: refused: a symbolic link (spec files are read only as they are; CDI specs must be root's alone)`,
      ]);
    });
  });

  it("refuses a spec directory that is not root's alone, or under one that is not, naming it", async () => {
    await withDirs(async ([etc, run]) => {
      const registry = new CdiRegistry([etc, run]);
      await fs.writeFile(join(run, 'gpu.json'), JSON.stringify(GPU_SPEC));
      assert.equal((await registry.resolve(['example.com/gpu=gpu0'])).length, 1);
      const refused = (why: RegExp) => (err: unknown) => err instanceof CdiError && /"example.com\/gpu=gpu0" is not defined/.test(err.message) && why.test(err.message);

      await fs.chmod(run, 0o777);
      await assert.rejects(registry.resolve(['example.com/gpu=gpu0']), refused(new RegExp(`${run}: spec directory refused: writable by its group and others \\(mode 0777\\)`)));
      await fs.chmod(run, 0o1777);
      await assert.rejects(registry.resolve(['example.com/gpu=gpu0']), refused(/writable by its group and others \(mode 1777\)/), 'sticky is no excuse for the directory itself');
      await fs.chmod(run, 0o755);
      await fs.chown(run, 65534, 65534);
      await assert.rejects(registry.resolve(['example.com/gpu=gpu0']), refused(/spec directory refused: owned by uid 65534, not root/));
      await fs.chown(run, 0, 0);

      // The directory above it: whoever may change it may swap the spec directory.
      const base = join(run, '..');
      await fs.chown(base, 65534, 65534);
      await assert.rejects(registry.resolve(['example.com/gpu=gpu0']), refused(new RegExp(`the directory above it, ${base}, is owned by uid 65534, not root`)));
      await fs.chown(base, 0, 0);

      // A spec directory reached through a symbolic link is refused; a link above it is followed and checked.
      const linkedDir = `${base}-link`;
      await fs.symlink(base, linkedDir);
      try {
        const throughLink = new CdiRegistry([join(linkedDir, 'run')]);
        assert.equal((await throughLink.resolve(['example.com/gpu=gpu0'])).length, 1);
        await fs.chmod(base, 0o775);
        await assert.rejects(throughLink.resolve(['example.com/gpu=gpu0']), refused(new RegExp(`the directory above it, ${linkedDir}, is writable by its group`)));
        await fs.chmod(base, 0o700);
        await fs.symlink(run, join(base, 'run-link'));
        await assert.rejects(new CdiRegistry([join(base, 'run-link')]).resolve(['example.com/gpu=gpu0']), refused(/spec directory refused: a symbolic link/));
      } finally {
        await fs.rm(linkedDir);
      }
      assert.equal((await registry.resolve(['example.com/gpu=gpu0'])).length, 1);
    });
  });

  it('an unknown device names the directories and any spec that could not be read', async () => {
    await withDirs(async ([etc, run]) => {
      const registry = new CdiRegistry([etc, run]);
      await fs.writeFile(join(etc, 'broken.json'), '{"cdiVersion": ');
      await assert.rejects(registry.resolve(['example.com/gpu=gpu9']), (err: unknown) => err instanceof CdiError && /gpu9.*broken\.json: not valid JSON/.test(err.message));
      await assert.rejects(registry.resolve(['not-qualified']), /not a fully qualified name/);
    });
  });
});

describe('CDI edits', () => {
  it("applies spec edits once and each device's own, replacing env entries of the same name", async () => {
    const spec = await parseCdiSpec(JSON.stringify(GPU_SPEC), false);
    const [gpu0, gpu1] = spec.devices;
    const edits = await collectCdiEdits([
      { name: 'example.com/gpu=gpu0', file: '/etc/cdi/gpu.json', specEdits: spec.containerEdits, deviceEdits: gpu0!.containerEdits },
      { name: 'example.com/gpu=gpu1', file: '/etc/cdi/gpu.json', specEdits: spec.containerEdits, deviceEdits: gpu1!.containerEdits },
    ]);
    assert.deepEqual(edits.env, ['VENDOR=example', 'GPU=0', 'GPU=1']);
    assert.deepEqual(edits.devices, [{ device: { type: 'c', path: '/dev/gpu0', major: 1, minor: 3, fileMode: 0o666, uid: 0, gid: 0 }, access: 'rw' }]);
    assert.deepEqual(edits.mounts, [{ containerPath: '/usr/lib/gpu', hostPath: '/opt/lib', readonly: true, propagation: 'private', options: ['nosuid'] }]);
    assert.deepEqual(edits.hooks, { createContainer: [{ path: '/bin/true', args: ['true', 'x'] }] });
    const input = applyCdiEdits({ rootfs: '/r', args: ['sh'], env: ['PATH=/bin', 'GPU=none'], user: { uid: 0, gid: 0, additionalGids: [0] } }, edits);
    assert.deepEqual(input.env, ['PATH=/bin', 'VENDOR=example', 'GPU=0', 'GPU=1']);
    assert.deepEqual(input.user?.additionalGids, [0, 44]);
  });

  it('a device node whose host path is missing names device and file', async () => {
    const edits = { deviceNodes: [{ path: '/dev/nope', hostPath: '/dev/does-not-exist' }] };
    await assert.rejects(collectCdiEdits([{ name: 'a.com/x=1', file: '/etc/cdi/x.json', specEdits: {}, deviceEdits: edits }]), /CDI device "a.com\/x=1" \(\/etc\/cdi\/x.json\): device \/dev\/does-not-exist is not available/);
  });
});

/**
 * CDI devices through CreateContainer: spec files in JSON and YAML in the configured directories,
 * their environment, device node, mount and hook edits seen from inside (and on the host), a spec
 * changed while Skiff runs, the refusals that leave nothing behind, and spec files that are not
 * root's alone (or are links) refused by name, their hooks never run.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { makeTempDir, removeDir } from './lib/tmp.js';

let h: RuntimeHarness;
let pod: Pod;
let base: string;
let etcDir: string;
let runDir: string;
let counter = 0;

function jsonSpec(env: string): string {
  return JSON.stringify({
    cdiVersion: '0.6.0',
    kind: 'skiff.test/dev',
    devices: [
      {
        name: 'null',
        containerEdits: {
          env: [`CDI_NULL=${env}`],
          deviceNodes: [{ path: '/dev/cdi-null', hostPath: '/dev/null', permissions: 'rw' }],
          mounts: [{ hostPath: join(base, 'data'), containerPath: '/cdi-data', options: ['ro', 'bind'] }],
          hooks: [{ hookName: 'createRuntime', path: '/bin/sh', args: ['sh', '-c', `echo ran > ${join(base, 'hook-ran')}`] }],
        },
      },
    ],
    containerEdits: { env: ['CDI_VENDOR=skiff'] },
  });
}

before(async () => {
  base = await makeTempDir('skiff-cdi');
  etcDir = join(base, 'etc-cdi');
  runDir = join(base, 'run-cdi');
  await Promise.all([mkdir(etcDir), mkdir(runDir), mkdir(join(base, 'data'))]);
  await writeFile(join(base, 'data', 'file'), 'from the host\n');
  await writeFile(join(etcDir, 'dev.json'), jsonSpec('one'));
  await writeFile(join(runDir, 'net.yaml'), 'cdiVersion: "0.8.0"\nkind: skiff.test/net\ndevices:\n  - name: eth\n    containerEdits:\n      env: ["CDI_NET=yaml"]\n');
  h = await startRuntimeHarness({ config: `cdi_spec_dirs = ["${etcDir}", "${runDir}"]` });
  pod = await h.runPod();
});

after(async () => {
  await h?.stop();
  if (base) await removeDir(base);
});

async function sh(id: string, script: string): Promise<string> {
  const r = await h.exec(id, ['sh', '-c', script]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('CDI devices', () => {
  test('a JSON spec: environment, a device node, a mount and a hook', async () => {
    const id = await h.runContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/dev=null' }] });
    assert.equal(await sh(id, 'echo "$CDI_VENDOR $CDI_NULL"'), 'skiff one\n');
    assert.equal(await sh(id, 'echo written > /dev/cdi-null && echo ok'), 'ok\n');
    assert.equal(await sh(id, 'cat /cdi-data/file'), 'from the host\n');
    assert.match((await h.exec(id, ['sh', '-c', 'touch /cdi-data/x'])).stderr, /Read-only file system/);
    assert.equal(await readFile(join(base, 'hook-ran'), 'utf8'), 'ran\n');
  });

  test('a YAML spec in the later directory, asked for by annotation', async () => {
    const id = await h.runContainer(pod, `cdi-${++counter}`, { annotations: { 'cdi.k8s.io/net': 'skiff.test/net=eth' } });
    assert.equal(await sh(id, 'echo $CDI_NET'), 'yaml\n');
  });

  test('a spec changed while Skiff runs applies to the next container', async () => {
    await writeFile(join(etcDir, 'dev.json'), jsonSpec('two'));
    const id = await h.runContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/dev=null' }] });
    assert.equal(await sh(id, 'echo $CDI_NULL'), 'two\n');
  });

  test("a spec that is not root's alone, or a link, is refused, naming the file, and its hook never runs", async () => {
    const file = join(runDir, 'hostile.json');
    const hookRan = join(base, 'hostile-hook-ran');
    const hostile = JSON.stringify({
      cdiVersion: '0.6.0',
      kind: 'skiff.test/hostile',
      devices: [{ name: 'x', containerEdits: { hooks: [{ hookName: 'createRuntime', path: '/bin/sh', args: ['sh', '-c', `echo ran > ${hookRan}`] }] } }],
    });
    const ask = () => h.createContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/hostile=x' }] });
    const was = await h.settledInventory();

    await writeFile(file, hostile, { mode: 0o644 });
    await chown(file, 65534, 65534);
    await rejectsWithCode(ask(), status.INVALID_ARGUMENT, new RegExp(`"skiff.test/hostile=x" is not defined .*${file}: refused: owned by uid 65534, not root`));
    await chown(file, 0, 0);
    await chmod(file, 0o664);
    await rejectsWithCode(ask(), status.INVALID_ARGUMENT, new RegExp(`${file}: refused: writable by its group \\(mode 0664\\)`));
    await rm(file);
    await writeFile(join(base, 'outside.json'), hostile, { mode: 0o644 });
    await symlink(join(base, 'outside.json'), file);
    await rejectsWithCode(ask(), status.INVALID_ARGUMENT, new RegExp(`${file}: refused: a symbolic link`));

    assert.ok(!existsSync(hookRan), "a refused spec's hook never ran");
    const now = await h.settledInventory();
    assert.deepEqual([now.mounts, now.containerDirs, now.runc], [was.mounts, was.containerDirs, was.runc]);
    const warnings = h.skiff.output().split('\n').filter((line) => line.includes(`CDI: ${file} is not used`));
    assert.ok(warnings.some((line) => line.includes('owned by uid 65534, not root')), 'the daemon warns, naming the file');
    assert.ok(warnings.some((line) => line.includes('a symbolic link')));

    // The same spec, root's alone, is used.
    await rm(file);
    await writeFile(file, hostile, { mode: 0o644 });
    await h.runContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/hostile=x' }] });
    assert.ok(existsSync(hookRan));
    await rm(file);
  });

  test('an unknown device, a malformed spec and a device defined twice are refused, leaving nothing', async () => {
    const was = await h.settledInventory();
    await rejectsWithCode(h.createContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/dev=missing' }] }), status.INVALID_ARGUMENT, /"skiff.test\/dev=missing" is not defined/);

    await writeFile(join(etcDir, 'broken.json'), '{"cdiVersion": "0.6.0", "kind": ');
    await rejectsWithCode(h.createContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/gpu=0' }] }), status.INVALID_ARGUMENT, /skiff.test\/gpu=0.*broken\.json: not valid JSON/);

    await writeFile(join(etcDir, 'twice.json'), jsonSpec('three'));
    await rejectsWithCode(h.createContainer(pod, `cdi-${++counter}`, { CDI_devices: [{ name: 'skiff.test/dev=null' }] }), status.INVALID_ARGUMENT, /defined by both .*dev\.json and .*twice\.json/);

    const now = await h.settledInventory();
    assert.deepEqual([now.mounts, now.containerDirs, now.runc], [was.mounts, was.containerDirs, was.runc]);
    assert.ok(existsSync(join(base, 'hook-ran')));
  });
});

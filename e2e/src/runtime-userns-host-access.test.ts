/**
 * The files of a pod with its own user namespace are out of reach of the host's other users: its
 * root filesystem (an image's 1777 /tmp), its /dev/shm and the directories that hold them refuse
 * an unprivileged local account (nobody), while the pod itself writes to its /tmp and /dev/shm.
 * Skiff's root is made reachable to all, as the pod's root needs it: the only barrier left is
 * Skiff's own directories for the pod.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRuntimeHarness, type RuntimeHarness } from './lib/runtime-harness.js';

const run = promisify(execFile);
const SIZE = 65536;
// Far above any real user, apart for each test process and from the other user-namespace tests'.
const HOST_BASE = 0x50000000 + (process.pid % 1000) * SIZE;
const NOBODY = 65534;

let h: RuntimeHarness;

/** Runs `args` as nobody, in no supplementary group; answers its exit code and stderr. */
async function asNobody(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', ...args]);
    return { code: 0, stderr };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stderr: e.stderr ?? '' };
  }
}

before(async () => {
  h = await startRuntimeHarness();
  await chmod(h.skiff.dir, 0o711);
});

after(async () => {
  await h?.stop();
});

test("no local user reaches a user-namespaced pod's root filesystem, /tmp or /dev/shm, while the pod writes there", async () => {
  const mapping = [{ host_id: HOST_BASE, container_id: 0, length: SIZE }];
  const namespace_options = { userns_options: { mode: 'POD' as const, uids: mapping, gids: mapping } };
  // runc's: user namespaces are its own (gVisor refuses them).
  const pod = await h.runPod({ linux: { security_context: { namespace_options } } }, '');
  const id = await h.runContainer(pod, 'app', { linux: { security_context: { namespace_options } } });
  const inPod = await h.exec(id, ['sh', '-c', 'echo tmp > /tmp/by-pod && echo shm > /dev/shm/by-pod && cat /tmp/by-pod /dev/shm/by-pod']);
  assert.deepEqual([inPod.code, inPod.stdout], [0, 'tmp\nshm\n'], inPod.stderr);

  const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true }, { timeoutMs: 10_000 });
  const { rootfs, bundle } = JSON.parse(info['info']!) as { rootfs: string; bundle: string };
  const sandboxDir = join(h.skiff.root, 'runtime', 'sandboxes', pod.id);
  // The way there is open: whatever refuses nobody is the pod's own directory.
  assert.equal((await asNobody(['stat', join(h.skiff.root, 'runtime', 'sandboxes')])).code, 0, "Skiff's directories above the pod's let anyone pass");

  for (const path of [rootfs, join(rootfs, 'tmp'), join(rootfs, 'tmp', 'by-pod'), join(sandboxDir, 'shm'), join(sandboxDir, 'shm', 'by-pod'), join(sandboxDir, 'rootfs')]) {
    const result = await asNobody(['stat', path]);
    assert.notEqual(result.code, 0, `nobody can stat ${path}`);
    assert.match(result.stderr, /Permission denied/, path);
  }
  for (const path of [join(rootfs, 'tmp', 'by-host'), join(sandboxDir, 'shm', 'by-host')]) {
    const result = await asNobody(['sh', '-c', `echo host > ${path}`]);
    assert.notEqual(result.code, 0, `nobody can write ${path}`);
    assert.match(result.stderr, /Permission denied/, path);
    assert.equal(existsSync(path), false, `${path} was not made`);
  }
  // How: the pod's directories are root's, with the pod's root's group, and closed to others.
  for (const dir of [bundle, sandboxDir]) {
    const st = await stat(dir);
    assert.deepEqual([st.uid, st.gid, (st.mode & 0o7777).toString(8)], [0, HOST_BASE, '710'], `${dir}: root's, the pod's root's group, 0710`);
  }
});

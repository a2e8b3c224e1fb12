/**
 * Volume mounts are made by the runtime inside the container's mount namespace, never as copies in
 * the host's mount table: recursive read-only binds (runc's `rro`), id-mapped binds of a pod with
 * its own user namespace (OCI uidMappings/gidMappings) and image volumes (overlays over layers,
 * id-mapped ones built out of the host's sight). What that gives, checked from the host: nothing new
 * in the host's mountinfo stands under a volume's source; a hostPath's submount can be unmounted
 * and its directory removed while a container with a recursive read-only mount of it exists (as
 * critest's "should support recursive readonly mounts" does, and as a CSI driver or the kubelet's
 * volume teardown does); and a container that swaps a directory of its hostPath for a link while
 * it is removed cannot make the teardown unmount a mount of the host.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { MULTILAYER } from './lib/image-catalogue.js';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { gvisorCannot, startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';

const run = promisify(execFile);
const SIZE = 65536;
// Far above any real user, apart from runtime-userns.test.ts's, and apart for each test process.
const HOST_BASE = 0x60000000 + (process.pid % 1000) * 2 * SIZE;

let h: RuntimeHarness;
let pod: Pod;
let usernsPod: Pod;
let counter = 0;

interface MountLine {
  id: number;
  root: string;
  point: string;
  source: string;
}

async function hostMounts(): Promise<MountLine[]> {
  const unescape = (f: string): string => f.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  return (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [left = '', right = ''] = line.split(' - ');
      const f = left.split(' ');
      return { id: Number(f[0]), root: unescape(f[3] ?? ''), point: unescape(f[4] ?? ''), source: right.split(' ')[1] ?? '' };
    });
}

/** Where `path` lies within its filesystem: what mountinfo's root field shows for a bind of it. */
async function pathInFilesystem(path: string): Promise<string> {
  const holder = (await hostMounts()).filter((m) => path === m.point || path.startsWith(m.point === '/' ? '/' : `${m.point}/`)).sort((a, b) => b.point.length - a.point.length)[0]!;
  const rest = path.slice(holder.point === '/' ? 0 : holder.point.length);
  return holder.root === '/' ? rest : `${holder.root}${rest}`;
}

const isUnder = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

async function sh(id: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return h.exec(id, ['sh', '-c', script]);
}

async function removeContainer(id: string): Promise<void> {
  await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 0 }, { timeoutMs: 60_000 });
  await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
}

/** A host directory holding a tmpfs at `sub` (its source named after `name`, to find copies of it). */
async function sourceWithSubmount(name: string, sub: string): Promise<string> {
  const dir = join(h.skiff.dir, name);
  await mkdir(join(dir, sub), { recursive: true });
  await chmod(dir, 0o777);
  await writeFile(join(dir, 'top'), 'top\n');
  await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0777', `skiff-e2e-${name}`, join(dir, sub)]);
  return dir;
}

before(async () => {
  h = await startRuntimeHarness({ images: ['busybox', 'multilayer'] });
  // The pod's root prepares its mounts: the directories above Skiff's root must let it pass.
  await chmod(h.skiff.dir, 0o711);
  pod = await h.runPod();
  // gVisor refuses user namespaces (runtime-svc's README): there only the plain pod's volumes are checked.
  const mapping = [{ host_id: HOST_BASE, container_id: 0, length: SIZE }];
  if (!UNDER_GVISOR) usernsPod = await h.runPod({ linux: { security_context: { namespace_options: { userns_options: { mode: 'POD', uids: mapping, gids: mapping } } } } });
});

after(async () => {
  // The test's own mounts first: the harness removes its directory.
  if (h) {
    for (const m of (await hostMounts()).filter((m) => isUnder(m.point, h.skiff.dir) && m.source.startsWith('skiff-e2e-')).sort((a, b) => b.point.length - a.point.length)) {
      await run('umount', ['--lazy', m.point]).catch(() => undefined);
    }
  }
  await h?.stop();
});

describe('volume mounts made inside the container', () => {
  test("the host's mount table gains nothing under a volume's source while containers with rro, id-mapped and image volumes run", async () => {
    const source = await sourceWithSubmount('volume-source', 'sub');
    const sourceInFs = await pathInFilesystem(source);
    const layers = join(h.skiff.root, 'images', 'snapshots');
    const layersInFs = await pathInFilesystem(layers);
    const before = new Set((await hostMounts()).map((m) => m.id));

    const rro: cri.Mount = { container_path: '/rro', host_path: source, readonly: true, recursive_read_only: true };
    const rw: cri.Mount = { container_path: '/rw', host_path: source };
    const image: cri.Mount = { container_path: '/vol', image: { image: h.imageRef('multilayer') }, image_sub_path: 'data' };
    if (UNDER_GVISOR) {
      await rejectsWithCode(h.createContainer(pod, `rro-${++counter}`, { mounts: [rro] }), status.INVALID_ARGUMENT, /recursive read-only/);
    }
    const volumes = UNDER_GVISOR ? [rw, image] : [rro, rw, image];
    const plain = await h.runContainer(pod, `plain-${++counter}`, { mounts: volumes });
    const mapped = UNDER_GVISOR ? undefined : await h.runContainer(usernsPod, `mapped-${++counter}`, { mounts: volumes });
    const containers = mapped === undefined ? [plain] : [plain, mapped];

    for (const id of containers) {
      if (!UNDER_GVISOR) assert.match((await sh(id, 'touch /rro/sub/x')).stderr, /Read-only file system/, 'the submount is read-only too');
      assert.equal((await sh(id, 'cat /rw/top')).stdout, 'top\n');
      assert.equal((await sh(id, 'cat /vol/b')).stdout, MULTILAYER.files['/data/b']);
    }
    if (mapped !== undefined) {
      // Id-mapped: the host's root owns the source, the pod's root sees it as its own, and what it writes is the host root's.
      assert.equal((await sh(mapped, 'stat -c %u /rw/top /rro/sub /vol/b')).stdout, '0\n0\n0\n');
      assert.equal((await sh(mapped, 'echo x > /rw/sub/by-pod-root && stat -c %u /rw/sub/by-pod-root')).stdout, '0\n');
    }

    const gained = (await hostMounts()).filter((m) => !before.has(m.id));
    assert.ok(containers.every((id) => gained.some((m) => m.point.includes(id))), 'the containers\' own mounts (root filesystems, image volumes) are there');
    const copies = gained.filter((m) => isUnder(m.point, source) || isUnder(m.root, sourceInFs) || m.source === 'skiff-e2e-volume-source' || isUnder(m.root, layersInFs));
    assert.deepEqual(copies.map((m) => `${m.point} (root ${m.root}, source ${m.source})`), []);

    for (const id of containers) await removeContainer(id);
    await h.settledInventory();
  });

  test("a hostPath's submount is unmounted and its directory removed while a container with a recursive read-only mount of it exists", gvisorCannot('recursive read-only mounts are refused with InvalidArgument (asserted above); Status reports recursive_read_only_mounts: false'), async () => {
    const hostPath = join(h.skiff.dir, `test${pod.id}`);
    await mkdir(join(hostPath, 'tmpfs'), { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'skiff-e2e-rro-critest', join(hostPath, 'tmpfs')]);
    const mount: cri.Mount = { container_path: '/mnt', host_path: hostPath, readonly: true, recursive_read_only: true, propagation: 'PROPAGATION_PRIVATE' };
    const ids = [await h.runContainer(pod, `rro-critest-${++counter}`, { mounts: [mount] }), await h.runContainer(usernsPod, `rro-critest-${++counter}`, { mounts: [mount] })];
    for (const id of ids) assert.match((await sh(id, 'touch /mnt/tmpfs/x')).stderr, /Read-only file system/);

    await run('umount', [join(hostPath, 'tmpfs')]);
    await rm(hostPath, { recursive: true });
    for (const id of ids) assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
    for (const id of ids) await removeContainer(id);
    await h.settledInventory();
  });

  test("a container swapping a directory of its hostPath for a link while it is removed cannot make the teardown unmount a host mount", async () => {
    // A writable hostPath with a mount two levels down (a/b), and a decoy mount of the host at decoy/b.
    const source = await sourceWithSubmount('swap-source', 'a/b');
    const decoyParent = join(h.skiff.dir, 'decoy');
    await mkdir(join(decoyParent, 'b'), { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'skiff-e2e-decoy', join(decoyParent, 'b')]);
    const decoyMounted = async (): Promise<boolean> => (await hostMounts()).some((m) => m.point === join(decoyParent, 'b') && m.source === 'skiff-e2e-decoy');

    const rw: cri.Mount = { container_path: '/data', host_path: source };
    const rro: cri.Mount = { container_path: '/rro', host_path: source, readonly: true, recursive_read_only: true };
    for (let round = 0; round < 6; round++) {
      // Under gVisor, without the recursive read-only mount and the user-namespaced pod it refuses.
      const ids = UNDER_GVISOR
        ? [await h.runContainer(pod, `swap-${++counter}`, { mounts: [rw] })]
        : [await h.runContainer(pod, `swap-${++counter}`, { mounts: [rro] }), await h.runContainer(usernsPod, `swap-${++counter}`, { mounts: [rw, rro] })];
      // What the pod can do through its writable hostPath, done from the host here for speed:
      // `a` and a link to the decoy's directory exchanged over and over (renameat2 RENAME_EXCHANGE).
      const swapper = spawn('python3', ['-c', SWAPPER, source, decoyParent], { stdio: ['pipe', 'pipe', 'inherit'] });
      await new Promise<void>((resolve, reject) => {
        swapper.stdout.once('data', () => resolve());
        swapper.once('exit', (code) => reject(new Error(`the swapper exited (${code}) before swapping`)));
      });
      try {
        for (const id of ids) await removeContainer(id);
        await h.settledInventory();
      } finally {
        swapper.stdin.end();
        await new Promise((resolve) => swapper.once('exit', resolve));
      }
      assert.ok(await decoyMounted(), `round ${round}: the decoy mount of the host is still mounted`);
      assert.ok((await hostMounts()).some((m) => m.point === join(source, 'a', 'b')), `round ${round}: the hostPath's own submount is still mounted`);
    }
  });
});

/** Exchanges SOURCE/a with a link to DECOY until its standard input closes, then leaves `a` a directory. */
const SWAPPER = `
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
source, decoy = sys.argv[1], sys.argv[2]
a, link = os.path.join(source, 'a').encode(), os.path.join(source, 'link').encode()
os.symlink(decoy, link)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
def exchange():
    if libc.renameat2(-100, a, -100, link, 2) != 0:
        raise OSError(ctypes.get_errno(), 'renameat2')
sys.stdout.write('swapping\\n'); sys.stdout.flush()
while not done.is_set():
    exchange()
if os.path.islink(a):
    exchange()
os.unlink(link)
`;

/**
 * Pods with their own user namespace (hostUsers: false): the mapping seen from inside, shared by
 * the pod's containers, files owned as the container should see them through id-mapped mounts
 * (nothing chowned), a hostPath written by the container's root owned by the host's, users inside
 * the namespace, namespaced capabilities (no clock, no kernel modules, no device nodes), every
 * refusal (host ids of the host's own users, ids outside runtime.userns_id_range), and SIGKILLs of runtime-svc in the middle of CreateContainer and RunPodSandbox.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { readProcStat } from '@skiff/common';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { gvisorCannot, startRuntimeHarness, UNDER_GVISOR, waitUntilRuntimeServiceAnswers, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { inventoryIds, placesOf } from './lib/runtime-inventory.js';

const SIZE = 65536;
// Far above any real user, and apart for each test process.
const HOST_BASE = 0x40000000 + (process.pid % 1000) * 4 * SIZE;
/** runtime.userns_id_range of the Skiff under test: HOST_BASE and the ids above it, up to 2^31. */
const ID_RANGE = { first: 0x40000000, count: 0x40000000 };

let h: RuntimeHarness;
let pod: Pod;
let counter = 0;
let hostDir: string;

function usernsOptions(hostId: number, extra: Partial<cri.UserNamespace> = {}): cri.NamespaceOption {
  return {
    userns_options: {
      mode: 'POD',
      uids: [{ host_id: hostId, container_id: 0, length: SIZE }],
      gids: [{ host_id: hostId, container_id: 0, length: SIZE }],
      ...extra,
    },
  };
}

function usernsPod(hostId: number, extra: Partial<cri.UserNamespace> = {}): Promise<Pod> {
  return h.runPod({ linux: { security_context: { namespace_options: usernsOptions(hostId, extra) } } });
}

async function run(name: string, overrides: Partial<cri.ContainerConfig> = {}): Promise<string> {
  const security = overrides.linux?.security_context ?? {};
  return h.runContainer(pod, `${name}-${++counter}`, {
    ...overrides,
    linux: { ...overrides.linux, security_context: { ...security, namespace_options: usernsOptions(HOST_BASE) } },
  });
}

/**
 * Live processes whose user namespace maps container uid 0 to `hostId`, with their command lines.
 * A zombie is left out: it is its parent's to reap (a pause orphaned by a killed runc run goes to
 * the host's init, which may take its time).
 */
async function processesMapping(hostId: number): Promise<string[]> {
  const found: string[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const map = await readFile(`/proc/${name}/uid_map`, 'utf8').catch(() => '');
    if (map.trim().split(/\s+/).slice(0, 2).join(' ') !== `0 ${hostId}`) continue;
    const state = readProcStat(Number(name))?.state;
    if (state === 'Z' || state === undefined) continue;
    found.push(`${name} ${(await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ').trim()} (${state})`);
  }
  return found;
}

async function sh(id: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return h.exec(id, ['sh', '-c', script]);
}

before(async () => {
  h = await startRuntimeHarness({ config: `userns_id_range = "${ID_RANGE.first}:${ID_RANGE.count}"` });
  // The pod's root prepares its mounts: the directories above Skiff's root must let it pass.
  await chmod(h.skiff.dir, 0o711);
  hostDir = join(h.skiff.dir, 'userns-host-data');
  await mkdir(hostDir);
  await chmod(hostDir, 0o777);
  if (!UNDER_GVISOR) pod = await usernsPod(HOST_BASE);
});

/** Under gVisor each case below is refused at RunPodSandbox, as the first test asserts. */
const REFUSED_BY_GVISOR = gvisorCannot('user namespaces (hostUsers: false) are refused with InvalidArgument; Status reports user_namespaces: false');

after(async () => {
  await h?.stop();
});

describe('a pod with its own user namespace', () => {
  test('its containers share the namespace and see the mapping', async () => {
    if (UNDER_GVISOR) {
      await rejectsWithCode(usernsPod(HOST_BASE), status.INVALID_ARGUMENT, /"runsc" does not support user namespaces/);
      const { runtime_handlers } = await callUnary(h.runtime, 'Status', {});
      assert.equal(runtime_handlers.find((r) => r.name === 'runsc')?.features?.user_namespaces, false);
      return;
    }
    const a = await run('a');
    const b = await run('b');
    for (const id of [a, b]) {
      assert.equal((await sh(id, 'cat /proc/self/uid_map')).stdout.trim().split(/\s+/).join(' '), `0 ${HOST_BASE} ${SIZE}`);
      assert.equal((await sh(id, 'cat /proc/self/gid_map')).stdout.trim().split(/\s+/).join(' '), `0 ${HOST_BASE} ${SIZE}`);
    }
    assert.equal((await sh(a, 'readlink /proc/self/ns/user')).stdout, (await sh(b, 'readlink /proc/self/ns/user')).stdout);
    const { runtime_handlers } = await callUnary(h.runtime, 'Status', {});
    // Every handler but gVisor's (see runtime-gvisor.test.ts) offers them.
    assert.ok(runtime_handlers.filter((r) => r.name !== 'runsc').every((r) => r.features?.user_namespaces === true));
  });

  test("the image's files look root-owned, the root is the pod's, and a hostPath file written by its root is the host's root's", REFUSED_BY_GVISOR, async () => {
    const id = await run('files', { mounts: [{ container_path: '/host', host_path: hostDir }] });
    assert.equal((await sh(id, 'stat -c %u:%g /bin/busybox /etc/passwd /')).stdout, '0:0\n0:0\n0:0\n');
    assert.equal((await sh(id, 'touch /in-root && echo /etc/hosts: $(stat -c %u /etc/hosts)')).stdout, '/etc/hosts: 0\n');
    assert.equal((await sh(id, 'echo hi > /host/by-root && stat -c %u /host/by-root')).stdout, '0\n');
    assert.equal((await stat(join(hostDir, 'by-root'))).uid, 0);
  });

  test('an image volume is built over id-mapped layers: its files look root-owned, read-only', REFUSED_BY_GVISOR, async () => {
    const id = await run('volume', { mounts: [{ container_path: '/vol', image: { image: h.imageRef('busybox') }, image_sub_path: 'etc' }] });
    assert.equal((await sh(id, 'stat -c %u:%g /vol/passwd')).stdout, '0:0\n');
    assert.match((await sh(id, 'cat /vol/passwd')).stdout, /^root:/);
    assert.match((await sh(id, 'touch /vol/x')).stderr, /Read-only file system/);
  });

  test('run_as_user and run_as_group inside the namespace, as outside', REFUSED_BY_GVISOR, async () => {
    const id = await run('user', {
      mounts: [{ container_path: '/host', host_path: hostDir }],
      linux: { security_context: { run_as_user: { value: 1000 }, run_as_group: { value: 2000 }, supplemental_groups: [3000] } },
    });
    assert.equal((await sh(id, 'echo "$(id -u) $(id -g) $(id -G)"')).stdout, '1000 2000 2000 3000\n');
    await sh(id, 'echo hi > /host/by-1000');
    const st = await stat(join(hostDir, 'by-1000'));
    assert.deepEqual([st.uid, st.gid], [1000, 2000]);
  });

  test("its root's capabilities are namespaced: the host's clock stays out of reach", REFUSED_BY_GVISOR, async () => {
    const id = await run('clock', { linux: { security_context: { capabilities: { add_capabilities: ['SYS_TIME'] } } } });
    // Setting the clock to what it reads: harmless even if a broken namespace let it through.
    // busybox's date reports the refusal on stderr but exits 0.
    const result = await sh(id, 'date -s @$(date +%s)');
    assert.match(result.stderr, /can't set date: Operation not permitted/);
  });

  test("its root can neither load a kernel module nor make a device node, though it holds CAP_SYS_MODULE and CAP_MKNOD in the pod's namespace", REFUSED_BY_GVISOR, async () => {
    const id = await run('module', { linux: { security_context: { capabilities: { add_capabilities: ['SYS_MODULE', 'MKNOD'] } } } });
    const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec((await sh(id, 'cat /proc/self/status')).stdout)![1]}`);
    assert.equal((capEff >> 16n) & 1n, 1n, 'CAP_SYS_MODULE (16) is in the effective set');
    assert.equal((capEff >> 27n) & 1n, 1n, 'CAP_MKNOD (27) is in the effective set');
    // Any file will do: the kernel checks the capability (in the host's namespace) before the
    // contents. A kernel built without modules has no such call at all (ENOSYS).
    const insmod = await sh(id, 'busybox insmod /bin/busybox');
    assert.notEqual(insmod.code, 0);
    assert.match(insmod.stderr, existsSync('/proc/modules') ? /Operation not permitted/ : /kernel does not support requested operation/);
    assert.match((await sh(id, 'mknod /tmp/null c 1 3')).stderr, /Operation not permitted/);
  });

  test('every mapping this runtime cannot honour is refused, naming the problem', REFUSED_BY_GVISOR, async () => {
    const mapping = (host_id: number, container_id = 0, length = SIZE): cri.IDMapping => ({ host_id, container_id, length });
    const cases: [Partial<cri.UserNamespace>, RegExp][] = [
      [{ mode: 'CONTAINER' }, /mode CONTAINER/],
      [{ mode: 'TARGET' }, /mode TARGET/],
      [{ uids: [mapping(HOST_BASE + SIZE, 0, 10), mapping(HOST_BASE + 2 * SIZE, 10, 10)] }, /exactly one uid mapping/],
      [{ uids: [mapping(HOST_BASE + SIZE, 1)], gids: [mapping(HOST_BASE + SIZE, 1)] }, /container uid 0 must be mapped/],
      [{ uids: [mapping(HOST_BASE + SIZE, 0, 0)], gids: [mapping(HOST_BASE + SIZE, 0, 0)] }, /length 0/],
      [{ uids: [mapping(HOST_BASE + SIZE)], gids: [mapping(HOST_BASE + SIZE, 0, 100)] }, /differ in shape/],
      [{ uids: [mapping(HOST_BASE + 100)], gids: [mapping(HOST_BASE + 100)] }, new RegExp(`overlap those of pod sandbox ${pod.id}`)],
      // The pod's root would be the host's root, or another of the host's users.
      [{ uids: [mapping(0)], gids: [mapping(0)] }, /the uid mapping starts at host uid 0; host uids below 65536 belong to the host's own users/],
      [{ uids: [mapping(HOST_BASE + SIZE)], gids: [mapping(1000)] }, /the gid mapping starts at host gid 1000/],
      [{ uids: [mapping(SIZE)], gids: [mapping(SIZE)] }, /the uid mapping 65536\+65536 is outside the host ids this node gives pods, 1073741824\+1073741824 \(runtime.userns_id_range\)/],
    ];
    for (const [options, message] of cases) await rejectsWithCode(usernsPod(HOST_BASE + SIZE, options), status.INVALID_ARGUMENT, message);
  });

  test('runtime-svc killed while it mounts overlays over id-mapped layers leaves none behind once it is back', REFUSED_BY_GVISOR, async () => {
    const containerMounts = async (): Promise<string[]> =>
      (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.includes(join(h.skiff.root, 'runtime', 'containers')));
    for (const delayMs of [30, 80, 150, 250]) {
      const pid = (await h.skiff.servicePid('runtime-svc'))!;
      const create = run(`killed-${delayMs}`).then(
        () => undefined,
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, delayMs));
      process.kill(pid, 'SIGKILL');
      await create;
      await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
      await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);
      const { containers } = await callUnary(h.runtime, 'ListContainers', {}, { timeoutMs: 10_000 });
      const stray = (await containerMounts()).filter((line) => !containers.some((c) => line.includes(`/${c.id}/`)));
      assert.deepEqual(stray, [], `after a SIGKILL ${delayMs} ms into CreateContainer`);
    }
  });

  test('runtime-svc killed in the middle of a user-namespaced RunPodSandbox: the pod is whole or gone, nothing else left', REFUSED_BY_GVISOR, async (t) => {
    const hostId = HOST_BASE + 2 * SIZE;
    // A fresh supervisor: the restart wait grows with each quick crash, and the test above crashed it.
    await h.restartSkiff();
    const t0 = Date.now();
    const probe = await usernsPod(hostId);
    const callMs = Date.now() - t0;
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: probe.id }, { timeoutMs: 60_000 });
    for (const fraction of [0.15, 0.45, 0.8]) {
      const before = new Set((await callUnary(h.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 })).items.map((p) => p.id));
      const pid = (await h.skiff.servicePid('runtime-svc'))!;
      const outcome = usernsPod(hostId).then(
        (started) => started.id,
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, Math.round(callMs * fraction)));
      process.kill(pid, 'SIGKILL');
      const returned = await outcome;
      await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
      await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);
      const at = `after a SIGKILL ${Math.round(callMs * fraction)} ms into RunPodSandbox (${callMs} ms uncut)`;

      const { items } = await callUnary(h.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 });
      const { containers } = await callUnary(h.runtime, 'ListContainers', {}, { timeoutMs: 10_000 });
      const made = items.filter((p) => !before.has(p.id));
      t.diagnostic(`${at}: ${returned ? 'the call completed' : 'the call was cut short'}, the pod is ${made.length > 0 ? 'whole' : 'gone'}`);
      if (returned) assert.deepEqual(made.map((p) => p.id), [returned], at);
      const inventory = await h.settledInventory();
      // Whole: ready, with its namespaces, its address and its pause process.
      for (const p of made) {
        assert.equal(p.state, 'SANDBOX_READY', at);
        assert.ok(inventory.netns.includes(p.id) && inventory.runc.includes(p.id) && Object.values(inventory.ipOwners).includes(p.id), `${at}: pod ${p.id} is listed but not whole`);
        assert.ok(inventory.mounts.some((m) => m.endsWith(`/${p.id}/userns`)), `${at}: pod ${p.id} has no user namespace`);
        await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }, { timeoutMs: 60_000 });
      }
      // Gone: nothing on the machine names an id the runtime does not list (namespaces, addresses,
      // nat rules, mounts: id-mapped ones and the user namespace's), and no process is in the namespace.
      const listed = new Set([...before, ...containers.map((c) => c.id)]);
      const after = await h.settledInventory();
      const strays = [...inventoryIds(after)].filter((id) => !listed.has(id)).map((id) => `${id} (${placesOf(after, id).join(', ')})`);
      assert.deepEqual(strays, [], at);
      assert.deepEqual(await processesMapping(hostId), [], `${at}: processes left in the pod's user namespace`);
    }
  });
});


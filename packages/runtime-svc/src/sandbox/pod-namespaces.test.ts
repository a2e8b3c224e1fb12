import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProcStat, runCommand } from '@skiff/common';
import { eventually, isRoot } from '@skiff/test-support';
import type { cri } from '@skiff/proto';
import { containerNamespaces } from '../container/container-spec.js';
import { RuntimePaths } from '../daemon/paths.js';
import { mountPoints } from '../mounts/mountinfo.js';
import { ProcessGoneError } from '../mounts/native-helpers.js';
import type { NamespaceModeName, SandboxRecord } from '../state/records.js';
import { makePodNamespaces, pinMissingNamespaces, pinPodNamespaces, podOwnNamespaces, unpinPodNamespaces } from './pod-namespaces.js';
import { sandboxRecordFromRequest } from './sandbox-config.js';

const ID = 'a'.repeat(64);
const paths = new RuntimePaths('/var/lib/skiff', '/run/skiff').sandbox(ID);

function sandbox(namespaces: SandboxRecord['namespaces'], userns = false): SandboxRecord {
  const request: cri.RunPodSandboxRequest__Output = {
    runtime_handler: '',
    config: { metadata: { name: 'p', namespace: 'n', uid: 'u', attempt: 0 }, hostname: '', log_directory: '', dns_config: null, port_mappings: [], labels: {}, annotations: {}, linux: null, windows: null },
  };
  const rec = sandboxRecordFromRequest(ID, request, { cgroupParent: '/skiff', cgroupDriver: 'cgroupfs', defaultHandler: '' }, '1');
  rec.namespaces = namespaces;
  if (userns) rec.userns = { uid: { containerID: 0, hostID: 1 << 30, size: 65536 }, gid: { containerID: 0, hostID: 1 << 30, size: 65536 } };
  rec.pid = 4242;
  rec.netnsPath = `/run/skiff/netns/${ID}`;
  return rec;
}

describe('the namespaces a pod pins and its containers join', () => {
  it('pins what the pause makes of its own: not the host IPC or PID namespace, and no UTS namespace on the host network', () => {
    assert.deepEqual(podOwnNamespaces(sandbox({ network: 'POD', pid: 'POD', ipc: 'POD' })), ['ipc', 'uts', 'pid']);
    assert.deepEqual(podOwnNamespaces(sandbox({ network: 'NODE', pid: 'NODE', ipc: 'NODE' })), []);
    assert.deepEqual(podOwnNamespaces(sandbox({ network: 'NODE', pid: 'CONTAINER', ipc: 'POD' })), ['ipc', 'pid']);
  });

  it("a container joins the pinned files and the pod's user namespace file, never /proc/<pause pid>", () => {
    const rec = sandbox({ network: 'POD', pid: 'POD', ipc: 'POD' }, true);
    assert.deepEqual(containerNamespaces(rec, paths, null, undefined), {
      user: { mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/${ID}/userns` },
      network: { mode: 'join', path: `/run/skiff/netns/${ID}` },
      uts: { mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/${ID}/utsns` },
      ipc: { mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/${ID}/ipcns` },
      pid: { mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/${ID}/pidns` },
    });
  });

  it("the host's namespaces where the pod or the container asks for them; a PID namespace of its own or a target's", () => {
    const host = sandbox({ network: 'NODE', pid: 'NODE', ipc: 'NODE' });
    assert.deepEqual(containerNamespaces(host, paths, null, undefined), { user: { mode: 'host' }, network: { mode: 'host' }, uts: { mode: 'host' }, ipc: { mode: 'host' }, pid: { mode: 'host' } });
    const pod = sandbox({ network: 'POD', pid: 'POD', ipc: 'POD' });
    const options = (pid: NamespaceModeName, ipc: NamespaceModeName): cri.NamespaceOption__Output => ({ network: 'POD', pid, ipc, target_id: '', userns_options: null });
    assert.deepEqual(containerNamespaces(pod, paths, options('CONTAINER', 'NODE'), undefined).pid, { mode: 'new' });
    assert.deepEqual(containerNamespaces(pod, paths, options('CONTAINER', 'NODE'), undefined).ipc, { mode: 'host' });
    assert.deepEqual(containerNamespaces(pod, paths, options('NODE', 'POD'), undefined).pid, { mode: 'host' });
    assert.deepEqual(containerNamespaces(pod, paths, options('TARGET', 'POD'), 77).pid, { mode: 'join', path: '/proc/77/ns/pid' });
  });

  it('a pod without a pause has IPC and UTS namespaces of its own but no PID namespace: a container asking for the pod\'s gets one of its own, never the host\'s', () => {
    const rec = { ...sandbox({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' }), pauseless: true as const, pid: undefined };
    assert.deepEqual(podOwnNamespaces(rec), ['ipc', 'uts']);
    const options = (pid: NamespaceModeName): cri.NamespaceOption__Output => ({ network: 'POD', pid, ipc: 'POD', target_id: '', userns_options: null });
    assert.deepEqual(containerNamespaces(rec, paths, options('CONTAINER'), undefined).pid, { mode: 'new' });
    assert.deepEqual(containerNamespaces(rec, paths, options('POD'), undefined).pid, { mode: 'new' });
    assert.deepEqual(containerNamespaces(rec, paths, null, undefined).pid, { mode: 'new' });
    assert.deepEqual(containerNamespaces(rec, paths, options('NODE'), undefined).pid, { mode: 'host' });
    assert.deepEqual(containerNamespaces(rec, paths, null, undefined).ipc, { mode: 'join', path: `/var/lib/skiff/runtime/sandboxes/${ID}/ipcns` });
    const hostPid = { ...sandbox({ network: 'NODE', pid: 'NODE', ipc: 'POD' }), pauseless: true as const };
    assert.deepEqual(podOwnNamespaces(hostPid), ['ipc']);
    assert.deepEqual(containerNamespaces(hostPid, paths, null, undefined).pid, { mode: 'host' });
  });
});

describe('the IPC and UTS namespaces of a pod without a pause', { skip: !isRoot && 'needs root' }, () => {
  let dir: string;
  let podPaths: ReturnType<RuntimePaths['sandbox']>;

  before(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'skiff-pod-ipc-uts-'));
    podPaths = new RuntimePaths(dir, join(dir, 'run')).sandbox(ID);
    await fs.mkdir(podPaths.dir, { recursive: true });
  });

  after(async () => {
    await unpinPodNamespaces(podPaths).catch(() => undefined);
    await fs.rm(dir, { recursive: true, force: true });
  });

  const nsOf = async (file: string): Promise<string> => (await runCommand('nsenter', [`--ipc=${file}`, 'readlink', '/proc/self/ns/ipc'], { timeoutMs: 5000 })).stdout.trim();

  it('makes them on their files with no process left in them, names the UTS one after the pod, and unpins them', async () => {
    const rec = { ...sandbox({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' }), pauseless: true as const, hostname: 'web-0' };
    await makePodNamespaces(rec, podPaths);
    const points = await mountPoints();
    assert.ok(points.has(podPaths.ipcns) && points.has(podPaths.utsns));
    await assert.rejects(fs.stat(podPaths.pidns), { code: 'ENOENT' });
    const name = await runCommand('nsenter', [`--uts=${podPaths.utsns}`, 'hostname'], { timeoutMs: 5000 });
    assert.equal(name.stdout.trim(), 'web-0');
    assert.notEqual(await nsOf(podPaths.ipcns), await fs.readlink('/proc/self/ns/ipc'));
    await unpinPodNamespaces(podPaths);
    for (const file of [podPaths.ipcns, podPaths.utsns]) await assert.rejects(fs.stat(file), { code: 'ENOENT' });
  });

  it('makes only the IPC namespace on the host network, and leaves nothing when a file is in the way', async () => {
    const hostNet = { ...sandbox({ network: 'NODE', pid: 'NODE', ipc: 'POD' }), pauseless: true as const, hostname: '' };
    await makePodNamespaces(hostNet, podPaths);
    assert.ok((await mountPoints()).has(podPaths.ipcns));
    await assert.rejects(fs.stat(podPaths.utsns), { code: 'ENOENT' });
    await unpinPodNamespaces(podPaths);
    await fs.writeFile(podPaths.utsns, '');
    const rec = { ...sandbox({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' }), pauseless: true as const };
    await assert.rejects(makePodNamespaces(rec, podPaths), /creating .*utsns: File exists/);
    assert.ok(!(await mountPoints()).has(podPaths.ipcns));
    await assert.rejects(fs.stat(podPaths.ipcns), { code: 'ENOENT' });
    await fs.rm(podPaths.utsns);
  });
});

describe('pinning a process’s namespaces', { skip: !isRoot && 'needs root' }, () => {
  let dir: string;
  let child: ChildProcess;
  let pid: number;
  let startTime: number;
  let pinPaths: ReturnType<RuntimePaths['sandbox']>;

  before(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'skiff-pod-namespaces-'));
    pinPaths = new RuntimePaths(dir, join(dir, 'run')).sandbox(ID);
    await fs.mkdir(pinPaths.dir, { recursive: true });
    // A process of new IPC, UTS and PID namespaces, as a pause is (sleep is PID 1 of its own).
    child = spawn('unshare', ['--ipc', '--uts', '--pid', '--fork', '--kill-child', 'sleep', '600'], { stdio: 'ignore' });
    await eventually('unshare started sleep', async () => {
      const found = (await runCommand('pgrep', ['-P', String(child.pid), 'sleep'], { timeoutMs: 5000 })).stdout.trim();
      if (found) pid = Number(found);
      return found !== '';
    });
    startTime = readProcStat(pid)!.startTime;
  });

  after(async () => {
    await unpinPodNamespaces(pinPaths).catch(() => undefined);
    child?.kill('SIGKILL');
    await fs.rm(dir, { recursive: true, force: true });
  });

  const inode = async (path: string): Promise<number> => (await fs.stat(path)).ino;
  const nsInode = async (kind: string): Promise<number> => Number(/\[(\d+)\]/.exec(await fs.readlink(`/proc/${pid}/ns/${kind}`))![1]);

  it('pins them on files whose inodes are the namespaces, and unpins them', async () => {
    await pinPodNamespaces(pinPaths, ['ipc', 'uts', 'pid'], { pid, startTime });
    assert.equal(await inode(pinPaths.ipcns), await nsInode('ipc'));
    assert.equal(await inode(pinPaths.utsns), await nsInode('uts'));
    assert.equal(await inode(pinPaths.pidns), await nsInode('pid'));
    await unpinPodNamespaces(pinPaths);
    const points = await mountPoints();
    for (const file of [pinPaths.ipcns, pinPaths.utsns, pinPaths.pidns]) {
      assert.ok(!points.has(file), `${file} is unmounted`);
      await assert.rejects(fs.stat(file), { code: 'ENOENT' });
    }
  });

  it('refuses a pid whose process started at another time (a recycled pid) or is gone, and leaves no file', async () => {
    await assert.rejects(pinPodNamespaces(pinPaths, ['ipc', 'uts'], { pid, startTime: startTime + 1 }), (err: unknown) => err instanceof ProcessGoneError && /another process now/.test(err.message));
    await assert.rejects(pinPodNamespaces(pinPaths, ['ipc'], { pid: 0x3ffffff0, startTime }), (err: unknown) => err instanceof ProcessGoneError && /not running/.test(err.message));
    for (const file of [pinPaths.ipcns, pinPaths.utsns]) await assert.rejects(fs.stat(file), { code: 'ENOENT' });
  });

  it('pins only what is missing, replacing a file with nothing mounted on it', async () => {
    await pinPodNamespaces(pinPaths, ['ipc'], { pid, startTime });
    await fs.writeFile(pinPaths.utsns, '');
    const rec = { namespaces: { network: 'POD', pid: 'POD', ipc: 'POD' } as const };
    assert.deepEqual(await pinMissingNamespaces(rec, pinPaths, { pid, startTime }), ['uts', 'pid']);
    assert.equal(await inode(pinPaths.utsns), await nsInode('uts'));
    assert.deepEqual(await pinMissingNamespaces(rec, pinPaths, { pid, startTime }), []);
    await unpinPodNamespaces(pinPaths);
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { callUnary, type cri } from '@skiff/proto';
import { startRuntimeHarness, UNDER_GVISOR, waitUntilRuntimeServiceAnswers, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { inventoryIds, placesOf, type RuntimeInventory } from './lib/runtime-inventory.js';

const run = promisify(execFile);

type OpKind = 'create' | 'start' | 'stop' | 'run-pod';

/**
 * Every step of each call, as its StepTimer names them: runtime-svc is killed at each in turn.
 * With SKIFF_TEST_KILL_STEP_FILE set (below) a daemon kills itself when its operation reaches the
 * step that file names (`<operation>:<step>`), so every kill lands inside its call at a known
 * point however fast the machine is (see @skiff/common's step-timer.ts).
 */
const STEPS: Record<OpKind, { op: string; steps: string[] }> = {
  create: { op: 'CreateContainer', steps: ['validate and resolve image', 'lease and dirs', 'overlay mounts', 'user and spec', 'rootfs and spec', 'logs-svc track', 'record'] },
  start: { op: 'StartContainer', steps: ['lock', 'checks', 'conmon + runc create', 'runc start', 'record'] },
  stop: { op: 'container stop', steps: ['refresh', 'signal and wait for exit', 'refresh after exit'] },
  'run-pod': {
    op: 'RunPodSandbox',
    steps: ['validate', 'record (creating)', 'netns', 'shm', 'pod files', 'record, netns, shm and rootfs dir', 'CNI ADD', 'runc run pause', 'pin namespaces', 'network and pause', 'record (ready)'],
  },
};
const OPS: readonly OpKind[] = ['create', 'start', 'stop', 'run-pod'];
/** StartContainer's steps from the launch on: a start killed at one of them is finished by the next runtime-svc. */
const LAUNCH_STEPS = ['conmon + runc create', 'runc start', 'record'];
/** The kill points, the calls' steps taken round-robin over the kinds of call. */
const PLAN: { kind: OpKind; step: string }[] = [];
for (let at = 0; PLAN.length < OPS.reduce((n, kind) => n + STEPS[kind].steps.length, 0); at++) {
  for (const kind of OPS) {
    const step = STEPS[kind].steps[at];
    if (step !== undefined) PLAN.push({ kind, step });
  }
}
/** Kills of runtime-svc, each in the middle of a call. */
const KILLS = PLAN.length;
/** The file naming the step at which runtime-svc kills itself next; runtime-svc sees it through the environment `skiff up` passes on. */
const KILL_STEP_FILE = join(tmpdir(), `skiff-restart-kill-step-${process.pid}`);
/**
 * The supervisor waits 0.2 s before the first restart and doubles the wait with each crash that
 * comes within 5 s of the start (up to 15 s); 20 quick crashes in a row would take minutes of waiting.
 * `skiff up` is restarted (orderly) after this many, which starts the backoff afresh.
 */
const KILLS_PER_SUPERVISOR = 4;

/** Ignores SIGTERM, so StopContainer waits out its timeout: a stop lasts long enough to be cut short. */
const STUBBORN = ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done'];

let h: RuntimeHarness;
/** What the supervisors that were restarted printed, kept for the report when the test fails. */
const earlierOutput: string[] = [];

/** Writes every supervisor's output (the services' logs) to a file named in the failure. */
async function withServiceLogsOnFailure(check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (err) {
    const file = join(tmpdir(), `skiff-restart-failure-${Date.now()}.log`);
    await writeFile(file, [...earlierOutput, h.skiff.output()].join('\n----- skiff up restarted -----\n'));
    if (err instanceof Error) err.message += `\n(the services' logs are in ${file})`;
    throw err;
  }
}

/** While this file exists, the "held" handler's `runc create` waits: a StartContainer can be cut short inside it. */
const HOLD_FILE = join(tmpdir(), `skiff-restart-hold-${process.pid}`);
const HELD_RUNTIME = join(tmpdir(), `skiff-restart-held-runtime-${process.pid}.sh`);

before(async () => {
  const runcPath = (await run('sh', ['-c', 'command -v runc'])).stdout.trim();
  await writeFile(
    HELD_RUNTIME,
    ['#!/bin/sh', 'for arg; do', `  if [ "$arg" = create ]; then while [ -e ${HOLD_FILE} ]; do sleep 0.05; done; fi`, 'done', `exec ${runcPath} "$@"`, ''].join('\n'),
    { mode: 0o755 },
  );
  process.env['SKIFF_TEST_KILL_STEP_FILE'] = KILL_STEP_FILE;
  h = await startRuntimeHarness({ images: ['busybox'], config: ['[[runtime.handlers]]', 'name = "held"', `runtime_path = "${HELD_RUNTIME}"`].join('\n') });
});

after(async () => {
  await h?.stop();
  await rm(HOLD_FILE, { force: true });
  await rm(HELD_RUNTIME, { force: true });
  await rm(KILL_STEP_FILE, { force: true });
});

async function listContainers(filter: cri.ContainerFilter = {}): Promise<cri.Container__Output[]> {
  return (await callUnary(h.runtime, 'ListContainers', { filter }, { timeoutMs: 10_000 })).containers;
}

async function listPods(filter: cri.PodSandboxFilter = {}): Promise<cri.PodSandbox__Output[]> {
  return (await callUnary(h.runtime, 'ListPodSandbox', { filter }, { timeoutMs: 10_000 })).items;
}

/**
 * runc's own view of a container: "created", "running", "stopped", or undefined when it has none.
 * Without a root, the view of the runtime of the tests' pods: runc's, or under gVisor runsc's.
 */
async function runcStatus(id: string, root?: string): Promise<string | undefined> {
  const [binary, stateRoot] = root !== undefined ? ['runc', root] : UNDER_GVISOR ? ['runsc', join(h.skiff.runDir, 'runtimes', 'runsc')] : ['runc', join(h.skiff.runDir, 'runc')];
  try {
    const { stdout } = await run(binary, ['--root', stateRoot, 'state', id]);
    return (JSON.parse(stdout) as { status: string }).status;
  } catch {
    return undefined;
  }
}

const RUNC_FOR_CONTAINER: Record<string, (string | undefined)[]> = {
  // A created container has no runc container before StartContainer.
  CONTAINER_CREATED: [undefined],
  CONTAINER_RUNNING: ['running'],
  CONTAINER_EXITED: ['stopped', undefined],
};

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** SIGKILL to runtime-svc, then the supervisor's restart (or a fresh `skiff up`) until it answers again. */
async function killRuntimeService(pid: number, restartSupervisor: boolean): Promise<void> {
  process.kill(pid, 'SIGKILL');
  if (restartSupervisor) {
    // Let the supervisor see the death first: it must not matter when the orderly stop comes.
    await sleep(50);
    earlierOutput.push(h.skiff.output());
    await h.restartSkiff();
  } else {
    await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
    await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);
  }
}

/** After runtime-svc killed itself at a kill point: the supervisor's restart (or a fresh `skiff up`) until it answers again. */
async function restartAfterKill(pid: number, restartSupervisor: boolean): Promise<void> {
  if (restartSupervisor) {
    for (let alive = true; alive; await sleep(20)) {
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
    }
    earlierOutput.push(h.skiff.output());
    await h.restartSkiff();
  } else {
    await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
    await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);
  }
}

describe('runtime-svc killed in the middle of calls', () => {
  test(`${KILLS} SIGKILLs, at every step of create, start, stop and RunPodSandbox: running containers survive, nothing stray`, async (t) => {
    const started = Date.now();
    const pods: Pod[] = [await h.runPod(), await h.runPod()];
    /** Containers whose StartContainer succeeded and that nothing has tried to stop since. */
    const running = new Set<string>();
    for (const pod of pods) for (let i = 0; i < 3; i++) running.add(await h.runContainer(pod, `steady-${running.size}`, { command: STUBBORN }));

    let interrupted = 0;
    for (const [i, { kind, step }] of PLAN.entries()) {
      const pod = pods[i % pods.length]!;
      const labels = { iteration: String(i) };
      let call: () => Promise<unknown>;
      let startingId: string | undefined;
      switch (kind) {
        case 'create':
          call = () => h.createContainer(pod, `c-${i}`, { command: STUBBORN, labels });
          break;
        case 'start': {
          const id = await h.createContainer(pod, `c-${i}`, { command: STUBBORN, labels });
          startingId = id;
          call = () => callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 30_000 });
          break;
        }
        case 'stop': {
          const candidates = [...running];
          assert.ok(candidates.length > 0, 'a running container to stop');
          const id = candidates[i % candidates.length]!;
          running.delete(id);
          call = () => callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 1 }, { timeoutMs: 30_000 });
          break;
        }
        case 'run-pod':
          call = () => h.runPod({ labels: { suite: 'runtime-e2e', ...labels } });
          break;
      }
      const pid = await h.skiff.servicePid('runtime-svc');
      assert.ok(pid !== undefined);
      const killPoint = `${STEPS[kind].op}:${step}`;
      await writeFile(KILL_STEP_FILE, killPoint);
      const result: { ok: true; value: unknown } | { ok: false; err: unknown } = await call().then(
        (value) => ({ ok: true as const, value }),
        (err: unknown) => ({ ok: false as const, err }),
      );
      assert.equal(await exists(KILL_STEP_FILE), false, `iteration ${i}: ${kind} never reached its step "${killPoint}"${result.ok ? ' (the call completed)' : ''}`);
      assert.equal(result.ok, false, `iteration ${i}: ${kind} answered although runtime-svc was killed at "${killPoint}"`);
      interrupted++;
      await restartAfterKill(pid, (i + 1) % KILLS_PER_SUPERVISOR === 0);
      if (kind === 'start' && startingId) {
        const state = (await h.containerStatus(startingId)).state;
        // Once the launch has begun, the restarted runtime-svc finishes the start.
        if (LAUNCH_STEPS.includes(step)) assert.equal(state, 'CONTAINER_RUNNING', `iteration ${i}: a StartContainer killed at "${step}" was finished after the restart`);
        if (state === 'CONTAINER_RUNNING') running.add(startingId);
      }
      if (kind === 'create') {
        // A create cut short before its record leaves no log file, which the kubelet would count as an attempt.
        const made = (await listContainers({ label_selector: labels })).length > 0;
        const logFile = join(pod.config.log_directory!, `c-${i}.log`);
        if (!made) assert.equal(await exists(logFile), false, `iteration ${i}: a CreateContainer killed at "${step}" left its log file ${logFile}`);
      }

      if (process.env['SKIFF_E2E_VERBOSE']) t.diagnostic(`${i} ${kind} killed at "${step}"`);
      // After every restart, everything that was running still is.
      const listedRunning = new Set((await listContainers({ state: { state: 'CONTAINER_RUNNING' } })).map((c) => c.id));
      for (const id of running) assert.ok(listedRunning.has(id), `iteration ${i} (${kind} killed at "${step}"): container ${id} is no longer running`);
    }
    t.diagnostic(`${interrupted} of ${KILLS} kills landed while the call was in flight`);
    assert.ok(interrupted >= KILLS / 2, `only ${interrupted} kills interrupted a call`);

    await withServiceLogsOnFailure(() => checkFinalState(running));
    t.diagnostic(`the kill loop took ${Math.round((Date.now() - started) / 1000)} s`);
  });
});

/** Whether a path exists. */
async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Waits until runtime-svc's output says `text`, or fails. */
async function outputSays(text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!h.skiff.output().includes(text)) {
    if (Date.now() > deadline) throw new Error(`runtime-svc never said "${text}"`);
    await sleep(20);
  }
}

/** Where a removed container or sandbox could still be found: the machine, its directory, its image lease. */
async function leftoversOf(id: string): Promise<string[]> {
  const places = placesOf(await h.inventory(), id);
  for (const dir of ['containers', 'sandboxes']) if (await exists(join(h.skiff.root, 'runtime', dir, id))) places.push(`runtime/${dir}`);
  if (await exists(join(h.skiff.root, 'images', 'leases', `${id}.json`))) places.push('image lease');
  return places;
}

/**
 * A directory in `dir` that cannot be removed (immutable): the cleanup of its owner fails at its
 * last step, leaving the directory and its record, until `unpin` is called.
 */
async function pin(dir: string): Promise<() => Promise<void>> {
  const pinned = join(dir, 'pinned-by-test');
  await mkdir(pinned);
  await writeFile(join(pinned, 'file'), '');
  await run('chattr', ['+i', pinned]);
  return async () => void (await run('chattr', ['-i', pinned]));
}

describe('runtime-svc killed right after a removal answered', () => {
  test('the restarted runtime-svc finishes the cleanup; removed names are free at once and never listed', async () => {
    const pod = await h.runPod();
    const a = await h.runContainer(pod, 'a');
    const b = await h.runContainer(pod, 'b');
    const c = await h.createContainer(pod, 'c');

    // RemoveContainer answers while its cleanup cannot finish (held at its last step, the directory's removal).
    const unpinA = await pin(join(h.skiff.root, 'runtime', 'containers', a));
    await callUnary(h.runtime, 'RemoveContainer', { container_id: a }, { timeoutMs: 60_000 });
    assert.ok(!(await listContainers()).some((x) => x.id === a), 'a removed container is not listed');
    const reused = await h.createContainer(pod, 'a');
    assert.notEqual(reused, a, 'the name is free at once');
    await outputSays(`cleaning up after the removal of container ${a} failed`);
    const record = join(h.skiff.root, 'runtime', 'containers', a, 'container.json');
    assert.equal(await exists(record), false, 'the record goes first: what the cut-short removal left holds none');
    assert.ok(await exists(join(h.skiff.root, 'runtime', 'containers', a)), 'the cleanup is not done when runtime-svc is killed');
    await unpinA();
    await killRuntimeService((await h.skiff.servicePid('runtime-svc'))!, false);
    assert.deepEqual(await leftoversOf(a), [], 'nothing of the removed container is left after the restart');
    assert.equal((await h.containerStatus(reused)).state, 'CONTAINER_CREATED');

    // RemovePodSandbox of a pod with running and created containers, killed the moment it answers.
    const pid = (await h.skiff.servicePid('runtime-svc'))!;
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    process.kill(pid, 'SIGKILL');
    await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
    await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);
    assert.deepEqual(await listPods({ id: pod.id }), []);
    for (const id of [pod.id, b, c, reused]) assert.deepEqual(await leftoversOf(id), [], `nothing of ${id} is left after the restart`);
    const again = await callUnary(h.runtime, 'RunPodSandbox', { config: pod.config }, { timeoutMs: 60_000 });
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: again.pod_sandbox_id }, { timeoutMs: 60_000 });

    // The same with the sandbox's own cleanup held: its record, not its containers', is what is left.
    const last = await h.runPod();
    const d = await h.runContainer(last, 'd');
    const unpinPod = await pin(join(h.skiff.root, 'runtime', 'sandboxes', last.id));
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: last.id }, { timeoutMs: 60_000 });
    assert.deepEqual(await listPods({ id: last.id }), []);
    await outputSays(`cleaning up after the removal of pod sandbox ${last.id} failed`);
    await unpinPod();
    await killRuntimeService((await h.skiff.servicePid('runtime-svc'))!, false);
    for (const id of [last.id, d]) assert.deepEqual(await leftoversOf(id), [], `nothing of ${id} is left after the restart`);
  });
});

describe('runtime-svc killed between CreateContainer and StartContainer, and inside StartContainer', () => {
  test('containers created before the kill are still created after it (one starts and runs, one is removed without a trace), unless their rootfs mount went (a reboot)', async () => {
    const pod = await h.runPod();
    const later = await h.createContainer(pod, 'start-after-kill', { command: ['sh', '-c', 'echo up; exec sleep 3600'] });
    const dropped = await h.createContainer(pod, 'remove-after-kill');
    // As a reboot leaves one: the record without its rootfs mount.
    const unmounted = await h.createContainer(pod, 'rootfs-gone');
    await run('umount', [join(h.skiff.root, 'runtime', 'containers', unmounted, 'rootfs')]);
    await killRuntimeService((await h.skiff.servicePid('runtime-svc'))!, false);

    for (const id of [later, dropped]) assert.equal((await h.containerStatus(id)).state, 'CONTAINER_CREATED');
    const lost = await h.containerStatus(unmounted);
    assert.equal(lost.state, 'CONTAINER_EXITED');
    assert.match(lost.message, /root filesystem was no longer mounted/);
    assert.deepEqual((await listContainers({ pod_sandbox_id: pod.id, state: { state: 'CONTAINER_CREATED' } })).map((c) => c.id).sort(), [later, dropped].sort());
    await callUnary(h.runtime, 'StartContainer', { container_id: later }, { timeoutMs: 30_000 });
    const started = await h.containerStatus(later);
    assert.equal(started.state, 'CONTAINER_RUNNING');
    assert.equal(await runcStatus(later), 'running');
    assert.deepEqual(await h.exec(later, ['echo', 'inside']), { code: 0, stdout: 'inside\n', stderr: '' });
    await eventuallyTrue(async () => (await readFile(started.log_path, 'utf8').catch(() => '')).includes('stdout F up\n'), 'the log file has what the container printed');

    for (const id of [dropped, unmounted]) {
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
      await eventuallyTrue(async () => (await leftoversOf(id)).length === 0, `nothing of ${id} is left`);
    }
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    for (const id of [pod.id, later]) await eventuallyTrue(async () => (await leftoversOf(id)).length === 0, `nothing of ${id} is left`);
  });

  test('a StartContainer cut short inside `runc create`: finished by the restarted runtime-svc, the container running, then removable', async () => {
    const pod = await h.runPod({}, 'held');
    const id = await h.createContainer(pod, 'cut-short');
    const heldRoot = join(h.skiff.runDir, 'runtimes', 'held');
    const pid = (await h.skiff.servicePid('runtime-svc'))!;
    await writeFile(HOLD_FILE, '');
    try {
      const start = callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000 }).then(
        () => 'started',
        () => 'cut short',
      );
      await eventuallyTrue(async () => (await processesNaming(id, 'create')).length > 0, '`runc create` runs');
      process.kill(pid, 'SIGKILL');
      assert.equal(await start, 'cut short');
    } finally {
      // The restarted runtime-svc waits for the create still in flight before it looks at the container.
      await rm(HOLD_FILE, { force: true });
    }
    await h.skiff.waitForNewPid('runtime-svc', pid, 60_000);
    await waitUntilRuntimeServiceAnswers(h.skiff.runtimeSocket, 60_000);

    const after = await h.containerStatus(id);
    assert.equal(after.state, 'CONTAINER_RUNNING');
    assert.equal(await runcStatus(id, heldRoot), 'running');
    assert.equal((await processesNaming(id, 'conmon')).length, 1, 'one monitor: the first launch was undone');
    assert.deepEqual(await h.exec(id, ['echo', 'inside']), { code: 0, stdout: 'inside\n', stderr: '' });
    assert.match(h.skiff.output(), new RegExp(`"container":"${id}"[^\n]*recovery: finished a StartContainer`));
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    for (const gone of [pod.id, id]) await eventuallyTrue(async () => (await leftoversOf(gone)).length === 0, `nothing of ${gone} is left`);
  });

  test('a StartContainer whose client went away inside `runc create` goes on, and ContainerStatus tells the container running only once it is', async () => {
    const pod = await h.runPod({}, 'held');
    const id = await h.createContainer(pod, 'client-gone');
    await writeFile(HOLD_FILE, '');
    let status: Promise<cri.ContainerStatus__Output> | undefined;
    try {
      const client = new AbortController();
      const start = callUnary(h.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 60_000, signal: client.signal }).then(
        () => 'answered',
        () => 'cancelled',
      );
      await eventuallyTrue(async () => (await processesNaming(id, 'create')).length > 0, '`runc create` runs');
      // As a kubelet killed in the middle of its call: the call ends, the start goes on.
      client.abort();
      assert.equal(await start, 'cancelled');
      status = h.containerStatus(id);
      const early = await Promise.race([status.then((s) => s.state), sleep(1000).then(() => 'no answer yet')]);
      assert.equal(early, 'no answer yet', 'ContainerStatus waits for the launch under way instead of telling it created');
    } finally {
      await rm(HOLD_FILE, { force: true });
    }
    assert.equal((await status).state, 'CONTAINER_RUNNING');
    await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
    for (const gone of [pod.id, id]) await eventuallyTrue(async () => (await leftoversOf(gone)).length === 0, `nothing of ${gone} is left`);
  });
});

/** Host processes whose command line has `id` and `word` (conmon: its program's name). */
async function processesNaming(id: string, word: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const argv = (await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (argv.includes(id) && (argv.includes(word) || argv[0]?.endsWith(word))) found.push(Number(name));
  }
  return found;
}

async function eventuallyTrue(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never true: ${what}`);
    await sleep(50);
  }
}

/** After the kills: the runtime's answers agree with the machine, and removing everything leaves it clean. */
async function checkFinalState(running: Set<string>): Promise<void> {
  // Every container: listed with the state runc knows it in; the running ones with a live pid.
  const containers = await listContainers();
  const sandboxes = await listPods();
  for (const id of running) assert.equal(containers.find((c) => c.id === id)?.state, 'CONTAINER_RUNNING', id);
  for (const c of containers) {
    const runcState = await runcStatus(c.id);
    assert.ok(RUNC_FOR_CONTAINER[c.state]!.includes(runcState), `container ${c.id} is ${c.state} but runc says ${runcState}`);
    if (c.state === 'CONTAINER_RUNNING') {
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: c.id, verbose: true });
      const pid = (JSON.parse(info['info']!) as { pid: number }).pid;
      assert.doesNotThrow(() => process.kill(pid, 0), `the process of running container ${c.id} is alive`);
    }
  }
  for (const s of sandboxes) {
    const runcState = await runcStatus(s.id);
    assert.equal(s.state === 'SANDBOX_READY', runcState === 'running', `sandbox ${s.id} is ${s.state} but runc says ${runcState}`);
  }

  // Nothing on the machine belongs to anything the runtime does not list.
  const ready = new Set(sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => s.id));
  const live = new Set([...ready, ...containers.filter((c) => c.state !== 'CONTAINER_EXITED').map((c) => c.id)]);
  const listed = new Set([...sandboxes.map((s) => s.id), ...containers.map((c) => c.id)]);
  const inventory = await h.settledInventory();
  const strays = (ids: Iterable<string>, allowed: Set<string>): string[] => [...ids].filter((id) => !allowed.has(id));
  const unlisted = strays(inventoryIds(inventory), listed).map((id) => `${id} (${placesOf(inventory, id).join(', ')})`);
  assert.deepEqual(unlisted, [], 'ids on the machine the runtime does not list');
  assert.deepEqual(strays(inventory.netns, ready), [], 'network namespaces of sandboxes that are not ready');
  assert.deepEqual(strays(Object.values(inventory.ipOwners), ready), [], 'addresses held for sandboxes that are not ready');
  assert.deepEqual(strays(inventory.natRuleOwners, ready), [], 'nat rules of sandboxes that are not ready');
  assert.deepEqual(strays(inventory.monitors.map((m) => m.id), live), [], 'conmon processes whose container has exited or is gone');
  const mountIds = inventory.mounts.flatMap((m) => m.split('/').filter((p) => /^[0-9a-f]{64}$/.test(p)));
  assert.deepEqual(strays(mountIds, listed), [], 'mounts of removed sandboxes or containers');

  // And removing everything through the CRI leaves the machine clean.
  for (const s of sandboxes) await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: s.id }, { timeoutMs: 60_000 });
  const empty: RuntimeInventory = { mounts: [], netns: [], runc: [], monitors: [], cgroups: [], ipOwners: {}, natRuleOwners: [], sandboxDirs: [], containerDirs: [], cniResults: [] };
  assert.deepEqual(await h.settledInventory(), empty);
}

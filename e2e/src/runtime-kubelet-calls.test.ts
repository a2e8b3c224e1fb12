/**
 * What the kubelet does that critest does not: it sends RunPodSandbox and CreateContainer again,
 * unchanged, after its deadline passed (the retry gets what the first call made, never
 * AlreadyExists); it gives up on calls (their work stops where nothing is half made, an ExecSync's
 * command is killed); and it reads ListContainerStats and ListPodSandboxStats for its summary API
 * and `kubectl top`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, watch } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { readProcStat } from '@skiff/common';
import { callUnary, type cri } from '@skiff/proto';
import { rejectsWithCode } from './lib/grpc-assert.js';
import { RUNTIME_HANDLER, startRuntimeHarness, UNDER_GVISOR, type Pod, type RuntimeHarness } from './lib/runtime-harness.js';
import { inventoryIds, placesOf } from './lib/runtime-inventory.js';

let h: RuntimeHarness;
/** Names the step at which runtime-svc holds itself (SIGSTOP) next; see @skiff/common's step-timer.ts. */
const HOLD_STEP_FILE = join(tmpdir(), `skiff-kubelet-calls-hold-step-${process.pid}`);

before(async () => {
  process.env['SKIFF_TEST_KILL_STEP_FILE'] = HOLD_STEP_FILE;
  h = await startRuntimeHarness({ images: ['busybox'] });
});

after(async () => {
  await h?.stop();
  await rm(HOLD_STEP_FILE, { force: true });
});

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The first entry made in `dir` from now on (watched, so it is seen the moment it appears): the
 * directory of the sandbox or container a call in flight has started to make. Entries removed
 * meanwhile (the cleanups of earlier tests) are not taken for it.
 */
function nextEntryIn(dir: string): Promise<string> {
  const known = new Set(readdirSync(dir));
  return new Promise((resolve, reject) => {
    const watcher = watch(dir, () => {
      const made = readdirSync(dir).find((name) => !known.has(name) && /^[0-9a-f]{64}$/.test(name));
      if (made === undefined) return;
      watcher.close();
      clearTimeout(timer);
      resolve(made);
    });
    const timer = setTimeout(() => {
      watcher.close();
      reject(new Error(`nothing was made in ${dir} within 30 s`));
    }, 30_000);
  });
}

/** Sends a call and cancels it the moment it has made its directory in `dir`; resolves to that directory's name. */
async function cancelOnceStarted(dir: string, send: (signal: AbortSignal) => Promise<unknown>): Promise<string> {
  const gone = new AbortController();
  const madeDir = nextEntryIn(dir);
  const call = send(gone.signal);
  const made = await madeDir;
  gone.abort();
  await rejectsWithCode(call, status.CANCELLED);
  return made;
}

/**
 * Sends a call with a deadline that passes while it runs (the kubelet's own timeout); resolves to
 * the directory the call made in `dir`.
 */
async function deadlinePassesOnceStarted(dir: string, send: (timeoutMs: number) => Promise<unknown>): Promise<string> {
  const madeDir = nextEntryIn(dir);
  const call = send(5000);
  const made = await madeDir;
  await rejectsWithCode(call, status.DEADLINE_EXCEEDED);
  return made;
}

/** Runs `work` with logs-svc stopped: a CreateContainer waits there for its answer, half made. */
async function withLogsServiceStopped<T>(work: (resume: () => void) => Promise<T>): Promise<T> {
  const pid = await h.skiff.servicePid('logs-svc');
  assert.ok(pid, 'logs-svc runs');
  process.kill(pid, 'SIGSTOP');
  let stopped = true;
  const resume = (): void => {
    if (stopped) process.kill(pid, 'SIGCONT');
    stopped = false;
  };
  try {
    return await work(resume);
  } finally {
    resume();
  }
}

/** Cancels `call` while runtime-svc holds itself (SIGSTOP at a step), then lets it go on. */
async function cancelWhileHeld(runtimePid: number, held: string, gone: AbortController, call: Promise<unknown>): Promise<void> {
  try {
    await eventually(held, async () => (readProcStat(runtimePid)?.state === 'T' ? true : undefined));
    gone.abort();
    await rejectsWithCode(call, status.CANCELLED);
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    process.kill(runtimePid, 'SIGCONT');
  }
}

/** The container named `name` that a cancelled CreateContainer made is undone, its log file last. */
async function assertUndone(pod: Pod, name: string, made: string): Promise<void> {
  await eventually('the container to be undone, its log file too', async () =>
    (await entriesOf(containersDir())).has(made) || (await entriesOf(pod.config.log_directory!)).has(`${name}.log`) ? undefined : true,
  );
  assert.deepEqual(await containersNamed(pod, name), []);
  await assertNothingLeftOf([made]);
}

async function entriesOf(dir: string): Promise<Set<string>> {
  return new Set(await readdir(dir).catch(() => [] as string[]));
}

async function podsNamed(name: string): Promise<cri.PodSandbox__Output[]> {
  return (await callUnary(h.runtime, 'ListPodSandbox', {}, { timeoutMs: 10_000 })).items.filter((p) => p.metadata?.name === name);
}

async function containersNamed(pod: Pod, name: string): Promise<cri.Container__Output[]> {
  const { containers } = await callUnary(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pod.id } }, { timeoutMs: 10_000 });
  return containers.filter((c) => c.metadata?.name === name);
}

async function removePod(id: string): Promise<void> {
  await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id }, { timeoutMs: 60_000 });
}

/** Once the cleanups are over, nothing on the machine mentions any of `ids`. */
async function assertNothingLeftOf(ids: readonly string[]): Promise<void> {
  const inventory = await h.settledInventory();
  const left = inventoryIds(inventory);
  for (const id of ids) assert.equal(left.has(id), false, `${id} left behind in ${placesOf(inventory, id).join(', ')}`);
}

const sandboxesDir = (): string => join(h.skiff.root, 'runtime', 'sandboxes');
const containersDir = (): string => join(h.skiff.root, 'runtime', 'containers');

describe('RunPodSandbox and CreateContainer retried after the client went away', () => {
  test('RunPodSandbox cancelled half-way and sent again at once: the retry waits for it and gets the same pod', async () => {
    const request = { config: h.podConfig(), runtime_handler: RUNTIME_HANDLER };
    const known = await entriesOf(sandboxesDir());
    const made = await cancelOnceStarted(sandboxesDir(), (signal) => callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000, signal }));

    const retry = await callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000 });
    assert.equal(retry.pod_sandbox_id, made);
    assert.deepEqual((await podsNamed(request.config.metadata!.name!)).map((p) => [p.id, p.state]), [[made, 'SANDBOX_READY']]);
    assert.deepEqual([...(await entriesOf(sandboxesDir()))].filter((name) => !known.has(name)), [made], 'one pod was made');
    // Answered once: the same request again is a second pod with a taken name.
    await rejectsWithCode(callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000 }), status.ALREADY_EXISTS, new RegExp(made));

    await removePod(made);
    await assertNothingLeftOf([made]);
  });

  test('RunPodSandbox cancelled, sent again once the pod is up: the pod it made; another config with its name: AlreadyExists', async () => {
    const request = { config: h.podConfig(), runtime_handler: RUNTIME_HANDLER };
    const name = request.config.metadata!.name!;
    await cancelOnceStarted(sandboxesDir(), (signal) => callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000, signal }));
    const [made] = await eventually('the cancelled call finishing its pod', async () => {
      const pods = await podsNamed(name);
      return pods.length > 0 ? pods : undefined;
    });

    const changed = { ...request, config: { ...request.config, hostname: 'another-host' } };
    await rejectsWithCode(callUnary(h.runtime, 'RunPodSandbox', changed, { timeoutMs: 60_000 }), status.ALREADY_EXISTS, new RegExp(made!.id));
    const retry = await callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000 });
    assert.equal(retry.pod_sandbox_id, made!.id);
    assert.equal((await podsNamed(name)).length, 1);

    await removePod(made!.id);
    await assertNothingLeftOf([made!.id]);
    // The name is free again: the same request makes a new pod.
    const again = await callUnary(h.runtime, 'RunPodSandbox', request, { timeoutMs: 60_000 });
    assert.notEqual(again.pod_sandbox_id, made!.id);
    await removePod(again.pod_sandbox_id);
  });

  test('CreateContainer past its deadline half-way and sent again at once: the same container, which starts and runs', async () => {
    const pod = await h.runPod();
    try {
      const request = { pod_sandbox_id: pod.id, config: h.containerConfig('retried'), sandbox_config: pod.config };
      const known = await entriesOf(containersDir());
      const { made, retry } = await withLogsServiceStopped(async (resume) => {
        const made = await deadlinePassesOnceStarted(containersDir(), (timeoutMs) => callUnary(h.runtime, 'CreateContainer', request, { timeoutMs }));
        // The retry arrives while the first call still waits for logs-svc.
        const retried = callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000 });
        resume();
        return { made, retry: await retried };
      });

      assert.equal(retry.container_id, made);
      assert.deepEqual((await containersNamed(pod, 'retried')).map((c) => c.id), [made]);
      assert.deepEqual([...(await entriesOf(containersDir()))].filter((name) => !known.has(name)), [made], 'one container was made');
      await rejectsWithCode(callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000 }), status.ALREADY_EXISTS, new RegExp(made));
      await callUnary(h.runtime, 'StartContainer', { container_id: made }, { timeoutMs: 60_000 });
      assert.equal((await h.containerStatus(made)).state, 'CONTAINER_RUNNING');

      await callUnary(h.runtime, 'RemoveContainer', { container_id: made }, { timeoutMs: 60_000 });
      await assertNothingLeftOf([made]);
    } finally {
      await removePod(pod.id);
    }
  });

  test('CreateContainer past its deadline, sent again once the container is there: that container', async () => {
    const pod = await h.runPod();
    try {
      const request = { pod_sandbox_id: pod.id, config: h.containerConfig('late-retry'), sandbox_config: pod.config };
      await withLogsServiceStopped(() => deadlinePassesOnceStarted(containersDir(), (timeoutMs) => callUnary(h.runtime, 'CreateContainer', request, { timeoutMs })));
      const [made] = await eventually('the cancelled call finishing its container', async () => {
        const found = await containersNamed(pod, 'late-retry');
        return found.length > 0 ? found : undefined;
      });
      const retry = await callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000 });
      assert.equal(retry.container_id, made!.id);
      assert.equal((await containersNamed(pod, 'late-retry')).length, 1);
    } finally {
      await removePod(pod.id);
    }
  });

  test('CreateContainer whose client went away before its deadline (a kubelet killed): undone with its log file; the same request makes a new one', async () => {
    const pod = await h.runPod();
    try {
      const request = { pod_sandbox_id: pod.id, config: h.containerConfig('client-left'), sandbox_config: pod.config };
      const made = await withLogsServiceStopped(() => cancelOnceStarted(containersDir(), (signal) => callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000, signal })));
      // Its log file goes last, after its directory: a kubelet started again numbers the next
      // attempt after the log files it finds.
      await eventually('the container the cancelled call made to be undone, its log file too', async () =>
        (await entriesOf(containersDir())).has(made) || (await entriesOf(pod.config.log_directory!)).has('client-left.log') ? undefined : true,
      );
      assert.deepEqual(await containersNamed(pod, 'client-left'), []);
      const again = await callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000 });
      assert.notEqual(again.container_id, made);
      await assertNothingLeftOf([made]);
    } finally {
      await removePod(pod.id);
    }
  });

  test('CreateContainer whose client went away while its record was written: undone with its log file', async () => {
    const pod = await h.runPod();
    const runtimePid = await h.skiff.servicePid('runtime-svc');
    assert.ok(runtimePid, 'runtime-svc runs');
    try {
      const request = { pod_sandbox_id: pod.id, config: h.containerConfig('left-late'), sandbox_config: pod.config };
      const gone = new AbortController();
      let call: Promise<unknown> | undefined;
      const made = await withLogsServiceStopped(async (resumeLogs) => {
        const madeDir = nextEntryIn(containersDir());
        call = callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000, signal: gone.signal });
        const dir = await madeDir;
        // config.json is the end of the rootfs and spec step; a moment later only logs-svc's
        // answer is awaited. runtime-svc holds itself once it has that answer, when nothing but
        // the record's write is left.
        await eventually('config.json of the container', async () => (existsSync(join(containersDir(), dir, 'config.json')) ? true : undefined));
        await new Promise((r) => setTimeout(r, 300));
        await writeFile(HOLD_STEP_FILE, 'CreateContainer:logs-svc track SIGSTOP');
        resumeLogs();
        return dir;
      });
      // The cancellation waits in runtime-svc's socket: it is read while the record is written.
      await cancelWhileHeld(runtimePid, 'runtime-svc held after logs-svc answered', gone, call!);
      await assertUndone(pod, 'left-late', made);
    } finally {
      await rm(HOLD_STEP_FILE, { force: true });
      await removePod(pod.id);
    }
  });

  test('CreateContainer whose client went away as its record was written, its close not yet read: undone', async () => {
    const pod = await h.runPod();
    const runtimePid = await h.skiff.servicePid('runtime-svc');
    assert.ok(runtimePid, 'runtime-svc runs');
    try {
      const request = { pod_sandbox_id: pod.id, config: h.containerConfig('left-unread'), sandbox_config: pod.config };
      const madeDir = nextEntryIn(containersDir());
      // runtime-svc holds itself once the record is written, just before it looks for a client gone.
      await writeFile(HOLD_STEP_FILE, 'CreateContainer:record SIGSTOP');
      const gone = new AbortController();
      const call = callUnary(h.runtime, 'CreateContainer', request, { timeoutMs: 60_000, signal: gone.signal });
      const made = await madeDir;
      // The cancellation is in runtime-svc's socket, unread, when runtime-svc goes on.
      await cancelWhileHeld(runtimePid, 'runtime-svc held once the record was written', gone, call);
      await assertUndone(pod, 'left-unread', made);
    } finally {
      await rm(HOLD_STEP_FILE, { force: true });
      await removePod(pod.id);
    }
  });
});

describe('ExecSync whose client went away', () => {
  let pod: Pod;
  let app: string;
  before(async () => {
    pod = await h.runPod();
    app = await h.runContainer(pod, 'app');
  });
  after(async () => {
    await removePod(pod.id);
  });

  async function running(pattern: RegExp): Promise<boolean> {
    return pattern.test((await h.exec(app, ['ps', '-o', 'args'])).stdout);
  }

  test('cancelled: the command is killed, nothing of it is left in the container', async () => {
    const gone = new AbortController();
    const call = callUnary(h.runtime, 'ExecSync', { container_id: app, cmd: ['sleep', '1234'], timeout: 0 }, { timeoutMs: 60_000, signal: gone.signal });
    await eventually('the command running', async () => ((await running(/^sleep 1234$/m)) ? true : undefined));
    gone.abort();
    await rejectsWithCode(call, status.CANCELLED);
    await eventually('the command gone', async () => ((await running(/^sleep 1234$/m)) ? undefined : true));
  });

  test('its deadline passed: the command is killed though its own timeout is far off', async () => {
    const call = callUnary(h.runtime, 'ExecSync', { container_id: app, cmd: ['sh', '-c', 'sleep 1235 & exec sleep 1236'], timeout: 3600 }, { timeoutMs: 5000 });
    await eventually('the command running', async () => ((await running(/^sleep 1236$/m)) ? true : undefined));
    await rejectsWithCode(call, status.DEADLINE_EXCEEDED);
    // Under gVisor only the command itself is killed, inside the sandbox (see runtime-svc's README).
    const left = UNDER_GVISOR ? /^sleep 1236$/m : /^sleep 123[56]$/m;
    await eventually('the command and its background child gone', async () => ((await running(left)) ? undefined : true));
  });
});

describe('the stats the kubelet reads', () => {
  let pod: Pod;
  let busy: string;
  const memoryLimit = 256 * 1024 * 1024;
  before(async () => {
    pod = await h.runPod();
    busy = await h.runContainer(pod, 'busy', {
      command: ['sh', '-c', 'while :; do :; done'],
      // No swap, as the kubelet asks on cgroup v1 for a container without swap.
      linux: { resources: { memory_limit_in_bytes: memoryLimit, memory_swap_limit_in_bytes: memoryLimit } },
    });
  });
  after(async () => {
    await removePod(pod.id);
  });

  async function containerStats(): Promise<cri.ContainerStats__Output> {
    const { stats } = await callUnary(h.runtime, 'ListContainerStats', { filter: { id: busy } }, { timeoutMs: 10_000 });
    assert.equal(stats.length, 1);
    return stats[0]!;
  }

  async function podStats(): Promise<cri.LinuxPodSandboxStats__Output> {
    const { stats } = await callUnary(h.runtime, 'ListPodSandboxStats', { filter: { id: pod.id } }, { timeoutMs: 10_000 });
    assert.equal(stats.length, 1);
    return stats[0]!.linux!;
  }

  const value = (v: cri.UInt64Value__Output | null | undefined): number => {
    assert.ok(v, 'the field is filled');
    return Number(v.value);
  };

  test('CPU rate after two readings, whoever reads in between; memory, swap and the writable layer', async () => {
    await containerStats();
    await podStats();
    await new Promise((r) => setTimeout(r, 1500));
    const second = await containerStats();
    assert.ok(value(second.cpu?.usage_nano_cores) > 0, 'a busy container uses CPU');
    assert.ok(value(second.cpu?.usage_core_nano_seconds) > 0);
    // The summary's other reader, right after: the same rate, not one over a few milliseconds.
    const sameWindow = await podStats();
    const third = sameWindow.containers.find((c) => c.attributes?.id === busy)!;
    const windowEnded = BigInt(second.cpu!.timestamp);
    if (BigInt(third.cpu!.timestamp) - windowEnded < 1_000_000_000n) assert.equal(third.cpu?.usage_nano_cores?.value, second.cpu?.usage_nano_cores?.value);
    else assert.ok(value(third.cpu?.usage_nano_cores) > 0);
    assert.ok(value(sameWindow.cpu?.usage_nano_cores) > 0, 'the pod uses CPU');
    assert.ok(value(sameWindow.process?.process_count) >= 1);
    assert.ok(value(sameWindow.memory?.working_set_bytes) > 0);

    const memory = second.memory!;
    const workingSet = value(memory.working_set_bytes);
    assert.ok(workingSet > 0);
    assert.ok(value(memory.usage_bytes) >= workingSet);
    assert.ok(value(second.writable_layer?.used_bytes) >= 0);
    assert.ok(second.writable_layer?.fs_id?.mountpoint);
    // gVisor's kernel accounts no page faults, swap or stalls per container, and keeps no per-container limit.
    if (UNDER_GVISOR) return;
    assert.ok(value(memory.rss_bytes) > 0);
    assert.ok(value(memory.page_faults) > 0);
    assert.ok(value(memory.major_page_faults) >= 0);
    assert.equal(value(memory.available_bytes), memoryLimit - workingSet);
    assert.equal(value(second.swap?.swap_usage_bytes), 0);
    assert.equal(value(second.swap?.swap_available_bytes), 0, 'memory+swap limited to the memory limit: no swap');
    // Pressure stall information from the cgroup's cgroup2 directory (the unified hierarchy of a hybrid host).
    for (const pressure of [second.cpu?.psi, second.memory?.psi, second.io?.psi]) {
      assert.ok(pressure?.Some, 'pressure is reported');
      assert.ok(Number(pressure.Some.Total) >= 0 && pressure.Some.Avg10 >= 0);
    }
  });
});

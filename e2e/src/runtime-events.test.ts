/**
 * GetContainerEvents as the kubelet's evented PLEG reads it: every transition of a pod sandbox and
 * its containers in order, each with the pod's status and its containers' statuses; exits by a
 * SIGKILL from outside and by the OOM killer reported without anyone asking; a pause process that
 * dies on its own; an exit streamed before its container's last log lines are in the file, while
 * ContainerStatus waits for them; several subscribers; a subscriber that stops reading, cut off
 * past its backlog while another reads on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { callUnary, type cri } from '@skiff/proto';
import { startRuntimeHarness, UNDER_GVISOR, type RuntimeHarness } from './lib/runtime-harness.js';
import { StalledGrpcStream } from './lib/stalled-grpc-stream.js';
import { childrenOf } from './lib/child-pids.js';

let h: RuntimeHarness;
const BACKLOG = 4;

before(async () => {
  // A flush that cannot pass through the journal gives up after a second (not five); a client
  // that stops reading is cut off after a few events (not 4096).
  h = await startRuntimeHarness({ config: `event_backlog = ${BACKLOG}`, skiff: { logsConfig: 'flush_timeout = "1s"' } });
});

/** logs-svc's `journalctl --follow`: stopping it holds every log line (and every flush) back. */
async function journalFollower(): Promise<number> {
  const logsPid = await h.skiff.servicePid('logs-svc');
  assert.ok(logsPid, 'logs-svc runs');
  const follower = childrenOf(logsPid).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.endsWith('journalctl'));
  assert.ok(follower, 'logs-svc follows the journal with journalctl');
  return follower;
}

after(async () => {
  await h?.stop();
});

/** A subscription that collects every event; `next` waits for one matching. */
class Events {
  readonly seen: cri.ContainerEventResponse__Output[] = [];
  readonly stream: ClientReadableStream<cri.ContainerEventResponse__Output>;
  ended: ServiceError | undefined;
  private waiters: (() => void)[] = [];

  constructor() {
    this.stream = h.runtime.GetContainerEvents({});
    this.stream.on('data', (e: cri.ContainerEventResponse__Output) => {
      this.seen.push(e);
      for (const w of this.waiters.splice(0)) w();
    });
    this.stream.on('error', (err: ServiceError) => {
      this.ended = err;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  async next(id: string, type: string, timeoutMs = 30_000): Promise<cri.ContainerEventResponse__Output> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.seen.find((e) => e.container_id === id && e.container_event_type === type);
      if (found) return found;
      if (this.ended) throw new Error(`the stream ended: ${this.ended.message}`);
      if (Date.now() > deadline) throw new Error(`no ${type} for ${id} within ${timeoutMs} ms; saw ${JSON.stringify(this.seen.map((e) => [e.container_id.slice(0, 8), e.container_event_type]))}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }

  typesOf(id: string): string[] {
    return this.seen.filter((e) => e.container_id === id).map((e) => e.container_event_type);
  }

  close(): void {
    this.stream.cancel();
  }
}

/** Waits until the server has the subscription: a Version round trip after the call started is not enough, so an event proves it. */
async function subscribed(events: Events): Promise<void> {
  const probe = await h.runPod();
  await events.next(probe.id, 'CONTAINER_STARTED_EVENT');
  await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: probe.id }, { timeoutMs: 60_000 });
}

describe('GetContainerEvents', () => {
  test('every transition of a pod and its container, in order, with the statuses the kubelet reads', async () => {
    const events = new Events();
    try {
      await subscribed(events);
      const pod = await h.runPod();
      const id = await h.runContainer(pod, 'events', { command: ['sh', '-c', 'sleep 1; exit 3'] });
      const stopped = await events.next(id, 'CONTAINER_STOPPED_EVENT');
      assert.equal(stopped.pod_sandbox_status?.id, pod.id);
      assert.deepEqual(
        stopped.containers_statuses.map((s) => [s.id, s.state, s.exit_code]),
        [[id, 'CONTAINER_EXITED', 3]],
      );
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
      await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
      await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }, { timeoutMs: 60_000 });
      await events.next(pod.id, 'CONTAINER_DELETED_EVENT');

      assert.deepEqual(events.typesOf(id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
      assert.deepEqual(events.typesOf(pod.id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
      const started = events.seen.find((e) => e.container_id === id && e.container_event_type === 'CONTAINER_STARTED_EVENT')!;
      assert.equal(started.pod_sandbox_status?.state, 'SANDBOX_READY');
      assert.ok(BigInt(started.created_at) > 0n);
    } finally {
      events.close();
    }
  });

  test('an exit by SIGKILL from outside and one by the OOM killer are streamed without anyone asking', async () => {
    const events = new Events();
    try {
      await subscribed(events);
      const pod = await h.runPod();
      const killed = await h.runContainer(pod, 'killed');
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: killed, verbose: true }, { timeoutMs: 10_000 });
      process.kill((JSON.parse(info['info']!) as { pid: number }).pid, 'SIGKILL');
      const stopped = await events.next(killed, 'CONTAINER_STOPPED_EVENT');
      assert.deepEqual(stopped.containers_statuses.filter((s) => s.id === killed).map((s) => [s.state, s.exit_code]), [['CONTAINER_EXITED', 137]]);

      // gVisor's kernel keeps no per-container memory limit: there the pod's cgroup bounds the sandbox,
      // and a pod over it is OOMKilled as a whole (runtime-svc's README, "Memory").
      const oomPod = UNDER_GVISOR ? await h.runPod({ linux: { cgroup_parent: await h.memoryBoundCgroupParent('events-oom', 160 * 1024 * 1024) } }) : pod;
      const hungry = await h.runContainer(oomPod, 'hungry', {
        command: ['sh', '-c', 'tail /dev/zero'],
        linux: { resources: { memory_limit_in_bytes: 16 * 1024 * 1024 } },
      });
      const oom = await events.next(hungry, 'CONTAINER_STOPPED_EVENT');
      assert.equal(oom.containers_statuses.find((s) => s.id === hungry)?.reason, 'OOMKilled');
    } finally {
      events.close();
    }
  });

  test('an exit is streamed while its last log lines are still on their way; ContainerStatus waits for them', async () => {
    const events = new Events();
    try {
      await subscribed(events);
      const pod = await h.runPod();
      const id = await h.runContainer(pod, 'last-words', { command: ['sh', '-c', 'trap "echo last-words; exit 7" TERM; touch /trapped; sleep 3600 & wait'] });
      // StartContainer answers once the shell runs, maybe before it has set its trap.
      for (let tries = 0; (await h.exec(id, ['test', '-e', '/trapped'])).code !== 0; tries++) {
        assert.ok(tries < 200, 'the container set its trap');
        await new Promise((r) => setTimeout(r, 50));
      }
      const { info } = await callUnary(h.runtime, 'ContainerStatus', { container_id: id, verbose: true }, { timeoutMs: 10_000 });
      const follower = await journalFollower();
      process.kill(follower, 'SIGSTOP');
      try {
        // Under gVisor the pid ContainerStatus reports is the container's holder on the host, which a
        // signal ends without passing it on (runtime-svc's README): the shell is signalled in the sandbox
        // (found by its command line: an exec's pid 1 there is the sandbox's pause).
        if (UNDER_GVISOR) await h.exec(id, ['sh', '-c', "kill -TERM $(ps -o pid,args | grep '[e]cho last-words' | awk '{ print $1 }')"]);
        else process.kill((JSON.parse(info['info']!) as { pid: number }).pid, 'SIGTERM');
        const stopped = await events.next(id, 'CONTAINER_STOPPED_EVENT');
        assert.deepEqual(
          stopped.containers_statuses.filter((s) => s.id === id).map((s) => [s.state, s.exit_code, s.reason, BigInt(s.finished_at) > 0n]),
          [['CONTAINER_EXITED', 7, 'Error', true]],
        );
        // The line is in the journal, not yet in the file: the exit is not recorded.
        assert.equal((await h.containerStatus(id)).state, 'CONTAINER_RUNNING');
      } finally {
        process.kill(follower, 'SIGCONT');
      }
      const status = await h.waitForExit(id);
      assert.deepEqual([status.exit_code, status.reason], [7, 'Error']);
      assert.match(readFileSync(join(h.logDir, pod.config.metadata!.name!, 'last-words.log'), 'utf8'), /stdout F last-words\n$/);
      // Recording the exit streams nothing more.
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 60_000 });
      await events.next(id, 'CONTAINER_DELETED_EVENT');
      assert.deepEqual(events.typesOf(id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
    } finally {
      events.close();
    }
  });

  test("a pause process that dies on its own is streamed as the sandbox's stop", async () => {
    const events = new Events();
    try {
      await subscribed(events);
      const pod = await h.runPod();
      const { info } = await callUnary(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod.id, verbose: true }, { timeoutMs: 10_000 });
      process.kill((JSON.parse(info['info']!) as { pid: number }).pid, 'SIGKILL');
      const stopped = await events.next(pod.id, 'CONTAINER_STOPPED_EVENT');
      assert.equal(stopped.pod_sandbox_status?.state, 'SANDBOX_NOTREADY');
      assert.equal((await h.podStatus(pod.id)).state, 'SANDBOX_NOTREADY');
    } finally {
      events.close();
    }
  });

  test('two subscribers each get every event, in order', async () => {
    const first = new Events();
    const second = new Events();
    try {
      await subscribed(first);
      await second.next(first.seen[0]!.container_id, 'CONTAINER_STARTED_EVENT');
      const pod = await h.runPod();
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        made.push(await h.createContainer(pod, `churn-${i}`, { command: ['true'] }));
        await callUnary(h.runtime, 'RemoveContainer', { container_id: made[i]! }, { timeoutMs: 60_000 });
      }
      const orders = [];
      for (const events of [first, second]) {
        await events.next(made[4]!, 'CONTAINER_DELETED_EVENT');
        orders.push(events.seen.filter((e) => made.includes(e.container_id)).map((e) => [e.container_id, e.container_event_type]));
        // A created container that is removed is stopped (killed) first.
        for (const id of made) assert.deepEqual(events.typesOf(id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
      }
      assert.deepEqual(orders[0], orders[1]);
      assert.deepEqual(orders[0]!.map(([id]) => id), made.flatMap((id) => [id, id, id]));
    } finally {
      first.close();
      second.close();
    }
  });

  test('a subscriber that stops reading is cut off past its backlog; another gets every event, in order', async () => {
    const stalled = new StalledGrpcStream(h.skiff.runtimeSocket, '/runtime.v1.RuntimeService/GetContainerEvents');
    const reader = new Events();
    try {
      await subscribed(reader);
      const pod = await h.runPod();
      const made: string[] = [];
      // Each container: created, stopped, deleted. The stalled stream takes a few events into the
      // server's write buffer, then BACKLOG more, and is cut off well before the last.
      for (let i = 0; i < 10; i++) {
        made.push(await h.createContainer(pod, `flood-${i}`, { command: ['true'] }));
        await callUnary(h.runtime, 'RemoveContainer', { container_id: made[i]! }, { timeoutMs: 60_000 });
      }
      await reader.next(made.at(-1)!, 'CONTAINER_DELETED_EVENT');
      assert.equal(reader.ended, undefined, 'the reading subscriber is never cut off');
      assert.deepEqual(
        reader.seen.filter((e) => made.includes(e.container_id)).map((e) => [e.container_id, e.container_event_type]),
        made.flatMap((id) => ['CONTAINER_CREATED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'].map((type) => [id, type])),
      );
      stalled.resume();
      const end = await Promise.race([
        stalled.ended,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the stalled stream did not end once read')), 30_000).unref()),
      ]);
      assert.equal(end.status, status.RESOURCE_EXHAUSTED, `the stalled stream ended with ${end.status}: ${end.message}`);
      // What was kept for it once it was cut off: the messages already handed to its stream (an
      // object-mode stream's high-water mark, 16, and the one in flight), never the backlog.
      assert.ok(end.messages <= 17 && end.messages < reader.seen.length, `the stalled stream got ${end.messages} of ${reader.seen.length} events`);
    } finally {
      stalled.close();
      reader.close();
    }
  });
});

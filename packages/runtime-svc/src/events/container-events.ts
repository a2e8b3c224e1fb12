import type { cri } from '@skiff/proto';
import { toCriContainerStatus } from '../container/container-view.js';
import { toCriSandboxStatus } from '../sandbox/sandbox-view.js';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import type { StateIndex } from '../state/state-index.js';
import { nowNanos } from '../util/time.js';
import { EventBus } from './event-bus.js';

export type ContainerEventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** How a container ended, as conmon's exit file (and its OOM file) tell it. */
export interface ExitFacts {
  exitCode: number;
  finishedAt: string;
  reason: string;
  message?: string;
}

/**
 * The container lifecycle events GetContainerEvents streams, as the kubelet's evented PLEG reads
 * them: each carries the pod sandbox's status and the statuses of all its containers at the time.
 * Pod sandbox transitions are events too, under the sandbox's id. Nothing is built while nobody
 * listens.
 *
 * An exit is streamed as soon as conmon's exit file is there (`containerExited`), before the
 * record says so: the record waits until logs-svc has the container's last lines in its log
 * file, which takes a round trip through the journal. Until then the events show the container
 * with the exit they streamed, and recording the exit streams nothing more.
 */
export class ContainerEvents {
  readonly bus: EventBus<cri.ContainerEventResponse>;
  /** Exits streamed but not recorded yet, by container id. */
  private readonly streamedExits = new Map<string, ExitFacts>();

  /** `maxBacklog`: events a subscriber that does not read may fall behind by before its stream is ended. */
  constructor(
    private readonly state: StateIndex,
    maxBacklog: number,
  ) {
    this.bus = new EventBus(maxBacklog);
  }

  container(rec: ContainerRecord, type: ContainerEventType): void {
    if (type === 'CONTAINER_STOPPED_EVENT' && this.streamedExits.delete(rec.id)) return;
    if (type === 'CONTAINER_DELETED_EVENT') this.streamedExits.delete(rec.id);
    if (this.bus.subscriberCount === 0) return;
    const sandbox = this.state.sandboxes.get(rec.sandboxId);
    this.bus.publish(this.event(rec.id, type, sandbox, rec.sandboxId));
  }

  /**
   * Streams the stop of a running container whose exit is known but not recorded yet. Once per
   * exit: a container already exited, or whose exit was streamed, is left alone.
   */
  containerExited(rec: ContainerRecord, exit: ExitFacts): void {
    if (rec.phase !== 'running' || this.streamedExits.has(rec.id) || this.bus.subscriberCount === 0) return;
    this.streamedExits.set(rec.id, exit);
    const sandbox = this.state.sandboxes.get(rec.sandboxId);
    this.bus.publish(this.event(rec.id, 'CONTAINER_STOPPED_EVENT', sandbox, rec.sandboxId));
  }

  sandbox(rec: SandboxRecord, type: ContainerEventType): void {
    if (this.bus.subscriberCount === 0) return;
    this.bus.publish(this.event(rec.id, type, rec, rec.id));
  }

  private statusOf(rec: ContainerRecord): cri.ContainerStatus {
    const exit = rec.phase === 'running' || rec.phase === 'created' ? this.streamedExits.get(rec.id) : undefined;
    return toCriContainerStatus(exit ? { ...rec, phase: 'exited', ...exit } : rec);
  }

  private event(id: string, type: ContainerEventType, sandbox: SandboxRecord | undefined, sandboxId: string): cri.ContainerEventResponse {
    const containers = this.state.containersOf(sandboxId);
    return {
      container_id: id,
      container_event_type: type,
      created_at: nowNanos(),
      ...(sandbox ? { pod_sandbox_status: toCriSandboxStatus(sandbox, sandbox.phase === 'ready') } : {}),
      containers_statuses: containers.map((c) => this.statusOf(c)),
    };
  }
}

import type { cri } from '@skiff/proto';
import { toCriContainerStatus } from '../container/container-view.js';
import { toCriSandboxStatus } from '../sandbox/sandbox-view.js';
import type { ContainerRecord, SandboxRecord } from '../state/records.js';
import type { StateIndex } from '../state/state-index.js';
import { nowNanos } from '../util/time.js';
import { EventBus } from './event-bus.js';

export type ContainerEventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/**
 * The container lifecycle events GetContainerEvents streams, as the kubelet's evented PLEG reads
 * them: each carries the pod sandbox's status and the statuses of all its containers at the time.
 * Pod sandbox transitions are events too, under the sandbox's id. Nothing is built while nobody
 * listens.
 */
export class ContainerEvents {
  readonly bus: EventBus<cri.ContainerEventResponse>;

  /** `maxBacklog`: events a subscriber that does not read may fall behind by before its stream is ended. */
  constructor(
    private readonly state: StateIndex,
    maxBacklog: number,
  ) {
    this.bus = new EventBus(maxBacklog);
  }

  container(rec: ContainerRecord, type: ContainerEventType): void {
    if (this.bus.subscriberCount === 0) return;
    const sandbox = this.state.sandboxes.get(rec.sandboxId);
    this.bus.publish(this.event(rec.id, type, sandbox, rec.sandboxId));
  }

  sandbox(rec: SandboxRecord, type: ContainerEventType): void {
    if (this.bus.subscriberCount === 0) return;
    this.bus.publish(this.event(rec.id, type, rec, rec.id));
  }

  private event(id: string, type: ContainerEventType, sandbox: SandboxRecord | undefined, sandboxId: string): cri.ContainerEventResponse {
    const containers = this.state.containersOf(sandboxId);
    return {
      container_id: id,
      container_event_type: type,
      created_at: nowNanos(),
      ...(sandbox ? { pod_sandbox_status: toCriSandboxStatus(sandbox, sandbox.phase === 'ready') } : {}),
      containers_statuses: containers.map(toCriContainerStatus),
    };
  }
}

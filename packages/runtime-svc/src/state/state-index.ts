import type { PodIdMappings } from '../sandbox/user-namespace.js';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import { NameReservations } from './name-reservations.js';
import { StartsInFlight } from './starts-in-flight.js';
import type { ContainerRecord, SandboxRecord } from './records.js';

/** The identity the kubelet gives a sandbox: one sandbox per name, namespace, uid and attempt. */
export function podNameKey(m: SandboxRecord['metadata']): string {
  return `${m.name}_${m.namespace}_${m.uid}_${m.attempt}`;
}

/** One container per name and attempt within a sandbox identity. */
export function containerNameKey(container: ContainerRecord['metadata'], pod: SandboxRecord['metadata']): string {
  return `${container.name}_${pod.name}_${pod.namespace}_${pod.uid}_${container.attempt}`;
}

/**
 * Which records exist (in memory, rebuilt from disk at start) and which names they hold. Ids may be
 * given in full or as an unambiguous prefix, as CRI clients such as crictl allow.
 */
export class StateIndex {
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly containers = new Map<string, ContainerRecord>();
  /** Pod names (name, namespace, uid, attempt), each held by one sandbox. */
  readonly podNames = new NameReservations('pod sandbox');
  /** User namespace ranges of sandboxes being created, not yet in `sandboxes`. */
  private readonly usernsCreating = new Map<string, PodIdMappings>();
  /** Container names (name, attempt and the pod's identity), each held by one container. */
  readonly containerNames = new NameReservations('container');
  /** Containers StartContainer is launching. */
  readonly starts = new StartsInFlight();

  reserveUserns(id: string, userns: PodIdMappings): void {
    this.usernsCreating.set(id, userns);
  }

  releaseUserns(id: string): void {
    this.usernsCreating.delete(id);
  }

  usernsInFlight(): { id: string; userns: PodIdMappings }[] {
    return [...this.usernsCreating].map(([id, userns]) => ({ id, userns }));
  }

  /** The sandbox an id (or unique id prefix) names; undefined when none does. */
  findSandbox(idOrPrefix: string): SandboxRecord | undefined {
    return findByPrefix(this.sandboxes, idOrPrefix, 'pod sandbox');
  }

  findContainer(idOrPrefix: string): ContainerRecord | undefined {
    return findByPrefix(this.containers, idOrPrefix, 'container');
  }

  containersOf(sandboxId: string): ContainerRecord[] {
    return [...this.containers.values()].filter((c) => c.sandboxId === sandboxId);
  }
}

function findByPrefix<T>(map: Map<string, T>, idOrPrefix: string, what: string): T | undefined {
  const exact = map.get(idOrPrefix);
  if (exact !== undefined || idOrPrefix === '') return exact;
  const matches = [...map.keys()].filter((id) => id.startsWith(idOrPrefix));
  if (matches.length > 1) {
    throw new StatusError(status.INVALID_ARGUMENT, `${what} id prefix "${idOrPrefix}" is ambiguous: it matches ${matches.length} ${what}s; give more digits`);
  }
  return matches[0] === undefined ? undefined : map.get(matches[0]);
}

import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import { clientGoneError, stopIfClientGone } from '../util/client-gone.js';

/** What reserving a name gave. */
export type Reservation =
  | { kind: 'reserved' }
  /** An identical request is making the object now: reserve again once it has settled. */
  | { kind: 'in-flight'; settled: Promise<void> }
  /** An identical request made it, and its client had gone before the answer: this is its id. */
  | { kind: 'made'; id: string };

interface Holder {
  id: string;
  /** The fingerprint of the request that reserved the name; undefined for names held by records read at start-up. */
  request: string | undefined;
  /** While the reserving call runs: resolved once it made the object or gave the name up. */
  settled: Promise<void> | undefined;
  settle: () => void;
  /** Made by a call whose client had gone: the next identical request is answered with it, once. */
  unclaimed: boolean;
}

/**
 * Who holds each pod or container name, and what a request for a name already held gets. A
 * request identical to the one that reserved the name (same fingerprint) is a retry: the kubelet
 * sends RunPodSandbox and CreateContainer again, unchanged, after its deadline passed. While the
 * first call still runs, the retry waits for it; if the first call made the object but its client
 * was gone by then, the retry gets that object's id (once: a later identical request is refused
 * again). Any other request for a held name is AlreadyExists naming the holder. One entry per name
 * held, so the map grows with the objects that exist, never with the requests.
 */
export class NameReservations {
  private readonly holders = new Map<string, Holder>();

  /** `kind` names the objects in messages: "pod sandbox", "container". */
  constructor(private readonly kind: string) {}

  /**
   * Reserves `key` for `id`, which a call is about to make from a request whose fingerprint is
   * `request`; without `request` (a record read at start-up) the name is held for good.
   */
  reserve(key: string, id: string, request?: string): Reservation {
    const holder = this.holders.get(key);
    if (holder === undefined) {
      let settle!: () => void;
      const settled = request === undefined ? undefined : new Promise<void>((resolve) => (settle = resolve));
      this.holders.set(key, { id, request, settled, settle: () => settle?.(), unclaimed: false });
      return { kind: 'reserved' };
    }
    if (holder.id === id) return { kind: 'reserved' };
    if (request !== undefined && holder.request === request) {
      if (holder.settled) return { kind: 'in-flight', settled: holder.settled };
      if (holder.unclaimed) {
        holder.unclaimed = false;
        return { kind: 'made', id: holder.id };
      }
    }
    throw new StatusError(status.ALREADY_EXISTS, `${this.kind} name "${key}" is already reserved for ${this.kind} ${holder.id}; remove that ${this.kind} first`);
  }

  /**
   * The call that reserved `key` for `id` made it. `clientGone`: the call's client had gone before
   * the answer (deadline passed, cancelled), so the next identical request is answered with `id`.
   */
  made(key: string, id: string, clientGone: boolean): void {
    const holder = this.holders.get(key);
    if (holder?.id !== id) return;
    holder.unclaimed = clientGone;
    holder.settled = undefined;
    holder.settle();
  }

  /** The name is free again: the call failed, or the object was removed. */
  release(key: string, id: string): void {
    const holder = this.holders.get(key);
    if (holder?.id !== id) return;
    this.holders.delete(key);
    holder.settle();
  }

  /** The id `key` is reserved for, if any. */
  holderOf(key: string): string | undefined {
    return this.holders.get(key)?.id;
  }
}

/** A request's fingerprint: the SHA-256 of its JSON with every object's keys sorted (map fields come in any order). */
export function requestFingerprint(request: unknown): string {
  const text = JSON.stringify(request, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
  return createHash('sha256').update(text).digest('hex');
}

export interface NameClaim {
  key: string;
  /** The id the calling request would make. */
  id: string;
  request: string;
  /** Aborted when the calling request's client has gone. */
  signal: AbortSignal | undefined;
  /** The CRI call, for messages. */
  call: string;
  /** Runs right before each attempt to reserve, with no await in between (a check that must hold at that moment). */
  check?: () => void;
  /** Runs right after the name is reserved for `id`, with no await in between. */
  onReserved?: () => void;
}

/**
 * Reserves a name for a call about to make its object, waiting while an identical request makes
 * it. Resolves to `claim.id` when the name is reserved for it (the caller makes the object, then
 * calls `made` or `release`), or to the id an identical earlier request made for a client that
 * had gone. A client that goes meanwhile ends the wait with CANCELLED: nothing was made for it.
 */
export async function reserveName(names: NameReservations, claim: NameClaim): Promise<string> {
  for (;;) {
    stopIfClientGone(claim.signal, claim.call);
    claim.check?.();
    const reservation = names.reserve(claim.key, claim.id, claim.request);
    if (reservation.kind === 'reserved') {
      claim.onReserved?.();
      return claim.id;
    }
    if (reservation.kind === 'made') return reservation.id;
    await settledOrClientGone(reservation.settled, claim.signal, claim.call);
  }
}

function settledOrClientGone(settled: Promise<void>, signal: AbortSignal | undefined, call: string): Promise<void> {
  if (!signal) return settled;
  return new Promise((resolve, reject) => {
    const gone = (): void => reject(clientGoneError(call));
    signal.addEventListener('abort', gone, { once: true });
    void settled.then(() => {
      signal.removeEventListener('abort', gone);
      resolve();
    });
  });
}

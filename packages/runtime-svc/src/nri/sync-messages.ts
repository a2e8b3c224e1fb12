import { nriMessageType, TTRPC_MAX_PAYLOAD_BYTES, type nri } from '@skiff/proto';

/**
 * The most one Synchronize request's payload may take. ttrpc refuses a message over 4 MiB; the
 * request envelope around the payload (service, method, timeout) takes far less than the margin.
 */
export const SYNC_MESSAGE_BUDGET_BYTES = TTRPC_MAX_PAYLOAD_BYTES - 64 * 1024;

/** One Synchronize request: `more` on every one but the last. */
export interface SyncMessage {
  pods: nri.PodSandbox[];
  containers: nri.Container[];
  more: boolean;
}

/** A pod or container that no Synchronize request can carry, however the state is split. */
export class NriSyncTooLargeError extends Error {}

const podType = nriMessageType('PodSandbox');
const containerType = nriMessageType('Container');
/** `more: true` as SynchronizeRequest's field 3. */
const MORE_FIELD_BYTES = 2;

/** Bytes a varint of `n` takes. */
function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    bytes += 1;
  }
  return bytes;
}

/** Bytes one element of a repeated message field (number below 16) takes: tag, length, message. */
function fieldBytes(encodedLength: number): number {
  return 1 + varintBytes(encodedLength) + encodedLength;
}

/**
 * The pods and containers as Synchronize requests, each within `budget` bytes: pods first, then
 * containers, in order, as many in each request as fit. The plugin collects the requests marked
 * `more` and answers the last with its updates. Always one request at least (an empty node sends
 * one empty request). A pod or container bigger than a request alone throws NriSyncTooLargeError.
 */
export function synchronizeMessages(pods: nri.PodSandbox[], containers: nri.Container[], budget = SYNC_MESSAGE_BUDGET_BYTES): SyncMessage[] {
  const messages: SyncMessage[] = [];
  let current: SyncMessage = { pods: [], containers: [], more: false };
  let used = 0;
  const room = budget - MORE_FIELD_BYTES;
  const add = (size: number, put: (m: SyncMessage) => void, what: () => string): void => {
    if (size > room) throw new NriSyncTooLargeError(`${what()} takes ${size} bytes in a Synchronize request, more than one request may carry (${room})`);
    if (used + size > room) {
      messages.push(current);
      current = { pods: [], containers: [], more: false };
      used = 0;
    }
    put(current);
    used += size;
  };
  for (const pod of pods) {
    const size = fieldBytes(podType.encode(podType.fromObject(pod)).finish().length);
    add(size, (m) => m.pods.push(pod), () => `pod ${pod.namespace ?? ''}/${pod.name ?? ''} (${pod.id ?? ''})`);
  }
  for (const container of containers) {
    const size = fieldBytes(containerType.encode(containerType.fromObject(container)).finish().length);
    add(size, (m) => m.containers.push(container), () => `container ${container.name ?? ''} (${container.id ?? ''}) of pod ${container.pod_sandbox_id ?? ''}`);
  }
  messages.push(current);
  for (const message of messages.slice(0, -1)) message.more = true;
  return messages;
}

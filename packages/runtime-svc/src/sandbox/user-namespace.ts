import { status } from '@grpc/grpc-js';
import { MIN_USERNS_HOST_ID, StatusError, type IdRange } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { IdMapping } from '../oci/runtime-spec.js';

/** A pod's own user namespace: one uid and one gid range, container id 0 first. */
export interface PodIdMappings {
  uid: IdMapping;
  gid: IdMapping;
}

function invalid(message: string): StatusError {
  return new StatusError(status.INVALID_ARGUMENT, `RunPodSandbox: user namespace: ${message}`);
}

function mappingOf(m: cri.IDMapping__Output, what: string, allowed: IdRange | undefined): IdMapping {
  if (m.length <= 0) throw invalid(`the ${what} mapping has length 0`);
  if (m.container_id !== 0) throw invalid(`container ${what} 0 must be mapped (the ${what} mapping starts at container ${what} ${m.container_id})`);
  if (m.host_id + m.length > 2 ** 32) throw invalid(`the ${what} mapping ${m.host_id}+${m.length} goes past the last ${what}`);
  if (m.host_id < MIN_USERNS_HOST_ID) {
    throw invalid(`the ${what} mapping starts at host ${what} ${m.host_id}; host ${what}s below ${MIN_USERNS_HOST_ID} belong to the host's own users (0 is its root) and are never mapped`);
  }
  if (allowed && (m.host_id < allowed.first || m.host_id + m.length > allowed.first + allowed.count)) {
    throw invalid(
      `the ${what} mapping ${m.host_id}+${m.length} is outside the host ids this node gives pods, ${allowed.first}+${allowed.count} (runtime.userns_id_range)`,
    );
  }
  return { containerID: m.container_id, hostID: m.host_id, size: m.length };
}

/**
 * The user namespace a pod asks for: undefined for the host's (mode NODE, or no options). A pod
 * of its own (mode POD) must give exactly one uid and one gid mapping of the same shape, mapping
 * container id 0 to host ids from MIN_USERNS_HOST_ID up, inside `allowed` when one is configured;
 * CONTAINER and TARGET apply to no pod.
 */
export function podUserNamespace(options: cri.UserNamespace__Output | null | undefined, allowed?: IdRange): PodIdMappings | undefined {
  if (!options || options.mode === 'NODE') return undefined;
  if (options.mode !== 'POD') throw invalid(`mode ${options.mode} is not supported; use POD (hostUsers: false) or NODE`);
  if (options.uids.length !== 1 || options.gids.length !== 1) {
    throw invalid(`exactly one uid mapping and one gid mapping are supported, got ${options.uids.length} and ${options.gids.length}`);
  }
  const uid = mappingOf(options.uids[0]!, 'uid', allowed);
  const gid = mappingOf(options.gids[0]!, 'gid', allowed);
  if (uid.size !== gid.size) throw invalid(`the uid mapping (length ${uid.size}) and the gid mapping (length ${gid.size}) differ in shape`);
  return { uid, gid };
}

function overlaps(a: IdMapping, b: IdMapping): boolean {
  return a.hostID < b.hostID + b.size && b.hostID < a.hostID + a.size;
}

/** The id of a pod whose host ranges overlap `mine` (the kubelet allocates disjoint ones; a runtime checks). */
export function podWithOverlappingIds(mine: PodIdMappings, others: Iterable<{ id: string; userns?: PodIdMappings | undefined }>): string | undefined {
  for (const other of others) {
    if (other.userns && (overlaps(mine.uid, other.userns.uid) || overlaps(mine.gid, other.userns.gid))) return other.id;
  }
  return undefined;
}

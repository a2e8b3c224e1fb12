import type { cri } from '@skiff/proto';
import type { ContainerRecord } from '../state/records.js';
import { appendMap, type EntryContent } from '../listing/list-entry-cache.js';
import { criSignalName } from './signals.js';

export function containerState(rec: ContainerRecord): cri.ContainerState__Output {
  switch (rec.phase) {
    case 'created':
      return 'CONTAINER_CREATED';
    case 'running':
      return 'CONTAINER_RUNNING';
    case 'exited':
      return 'CONTAINER_EXITED';
    default:
      return 'CONTAINER_UNKNOWN';
  }
}

function imageSpec(rec: ContainerRecord): cri.ImageSpec {
  return { image: rec.image.display, annotations: {}, user_specified_image: rec.image.display, image_ref: rec.image.id };
}

/** The ListContainers entry of a container. */
export function toCriContainer(rec: ContainerRecord): cri.Container {
  return {
    id: rec.id,
    pod_sandbox_id: rec.sandboxId,
    metadata: rec.metadata,
    image: imageSpec(rec),
    image_ref: rec.image.ref,
    state: containerState(rec),
    created_at: rec.createdAt,
    labels: rec.labels,
    annotations: rec.annotations,
    image_id: rec.image.id,
  };
}

/**
 * Every record value toCriContainer encodes, flat: while it is the same, so is the entry. (A test
 * changes each value the entry's encoding reads and checks that this changes too.)
 */
export function criContainerContent(rec: ContainerRecord): EntryContent {
  const content: (string | number)[] = [
    rec.id,
    rec.sandboxId,
    rec.metadata.name,
    rec.metadata.attempt,
    rec.image.display,
    rec.image.id,
    rec.image.ref,
    rec.phase,
    rec.createdAt,
  ];
  appendMap(content, rec.labels);
  appendMap(content, rec.annotations);
  return content;
}

export function toCriContainerStatus(rec: ContainerRecord): cri.ContainerStatus {
  return {
    id: rec.id,
    metadata: rec.metadata,
    state: containerState(rec),
    created_at: rec.createdAt,
    started_at: rec.startedAt ?? '0',
    finished_at: rec.finishedAt ?? '0',
    exit_code: rec.exitCode ?? 0,
    image: imageSpec(rec),
    image_ref: rec.image.ref,
    reason: rec.phase === 'exited' ? (rec.reason ?? '') : '',
    message: rec.message ?? '',
    labels: rec.labels,
    annotations: rec.annotations,
    mounts: rec.mounts,
    log_path: rec.logPath,
    resources: rec.resources ? { linux: rec.resources } : null,
    image_id: rec.image.id,
    user: { linux: { uid: String(rec.user.uid), gid: String(rec.user.gid), supplemental_groups: rec.user.supplementalGroups.map(String) } },
    // The signal StopContainer will send: the config's, else the image's STOPSIGNAL, else SIGTERM.
    stop_signal: rec.criStopSignal !== 'SIGNAL_RUNTIME_DEFAULT' ? rec.criStopSignal : criSignalName(rec.stopSignal),
  };
}

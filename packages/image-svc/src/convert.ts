import { imageListEncoder, type cri } from '@skiff/proto';
import type { ImageRecord } from '@skiff/image-store';

/** The image config's User is "uid", "uid:gid", "name" or "name:group"; CRI wants a uid or else a name. */
export function userOfImage(user: string): { uid?: string; username: string } {
  const name = user.split(':')[0] ?? '';
  if (name === '') return { username: '' };
  return /^[0-9]+$/.test(name) ? { uid: String(BigInt(name)), username: '' } : { username: name };
}

// Records are immutable (the store replaces them on every change), so each converts once, and is
// sealed: its ListImages entry is encoded then, and copied into every ListImages and ImageStatus
// answer (the CRI Image returned is deep-frozen).
const converted = new WeakMap<ImageRecord, cri.Image>();

export function toCriImage(record: ImageRecord): cri.Image {
  let image = converted.get(record);
  if (!image) {
    image = imageListEncoder.seal(convert(record));
    converted.set(record, image);
  }
  return image;
}

function convert(record: ImageRecord): cri.Image {
  const user = userOfImage(record.user);
  const image: cri.Image = {
    id: record.id,
    repo_tags: record.repoTags,
    repo_digests: record.repoDigests,
    size: String(record.size),
    username: user.username,
    spec: { image: record.id, annotations: record.annotations },
    pinned: record.pinned,
  };
  if (user.uid !== undefined) image.uid = { value: user.uid };
  return image;
}

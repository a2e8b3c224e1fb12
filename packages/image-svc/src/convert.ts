import type { cri } from '@skiff/proto';
import type { ImageRecord } from '@skiff/image-store';

/** The image config's User is "uid", "uid:gid", "name" or "name:group"; CRI wants a uid or else a name. */
export function userOfImage(user: string): { uid?: string; username: string } {
  const name = user.split(':')[0] ?? '';
  if (name === '') return { username: '' };
  return /^[0-9]+$/.test(name) ? { uid: String(BigInt(name)), username: '' } : { username: name };
}

export function toCriImage(record: ImageRecord): cri.Image {
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

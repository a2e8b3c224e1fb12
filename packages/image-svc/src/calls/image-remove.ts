// CRI ImageService.RemoveImage
import { status } from '@grpc/grpc-js';
import { StatusError, type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';

/** Removing an image that is not there succeeds: the kubelet retries removals and expects that. */
export async function removeImageCall(store: ImageStore, log: Logger, request: cri.RemoveImageRequest__Output): Promise<cri.RemoveImageResponse> {
  const reference = request.image?.image ?? '';
  if (reference === '') throw new StatusError(status.INVALID_ARGUMENT, 'RemoveImage: image.image is required');
  // The image is gone once the index says so; its unshared layers are deleted after the answer.
  const outcome = await store.removeImage(reference, { collectInBackground: true });
  if (outcome !== 'absent') log.info({ image: reference, outcome }, 'image removed');
  return {};
}

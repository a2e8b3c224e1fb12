// CRI ImageService.ImageStatus
import { status } from '@grpc/grpc-js';
import { StatusError } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';
import { toCriImage } from '../convert.js';

/** An unknown image is not an error: the response simply has no image (the kubelet relies on it). */
export async function imageStatusCall(store: ImageStore, request: cri.ImageStatusRequest__Output): Promise<cri.ImageStatusResponse> {
  const reference = request.image?.image ?? '';
  if (reference === '') throw new StatusError(status.INVALID_ARGUMENT, 'ImageStatus: image.image is required');
  const record = await store.find(reference);
  if (!record) return {};
  const response: cri.ImageStatusResponse = { image: toCriImage(record) };
  if (request.verbose) {
    const config = await store.readConfig(record);
    response.info = {
      info: JSON.stringify({
        id: record.id,
        manifestDigest: record.manifestDigest,
        platform: record.platform,
        layers: record.layers,
        snapshots: store.snapshotDirs(record),
        createdAt: record.createdAt,
        imageSpec: config,
      }),
    };
  }
  return response;
}

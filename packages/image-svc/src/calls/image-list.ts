// CRI ImageService.ListImages and ImageService.StreamImages
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';
import { toCriImage } from '../convert.js';

/** With a filter, the images that reference names (by id, tag or digest); otherwise all of them. */
export async function listImagesCall(store: ImageStore, request: cri.ListImagesRequest__Output): Promise<cri.ListImagesResponse> {
  const wanted = request.filter?.image?.image ?? '';
  if (wanted === '') return { images: (await store.list()).map(toCriImage) };
  const record = await store.find(wanted);
  return { images: record ? [toCriImage(record)] : [] };
}

/** StreamImages: the ListImages entries, which the server sends in batches. */
export async function streamImagesCall(store: ImageStore, request: cri.StreamImagesRequest__Output): Promise<cri.Image[]> {
  return (await listImagesCall(store, { filter: request.filter })).images ?? [];
}

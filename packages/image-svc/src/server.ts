import { batchedStreamCall, unaryCall, type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';
import type { Puller } from './puller.js';
import { toStatusError } from './errors.js';
import { pullImage } from './handlers/pull-image.js';
import { imageStatus } from './handlers/image-status.js';
import { listImages } from './handlers/list-images.js';
import { removeImage } from './handlers/remove-image.js';
import { imageFsInfo } from './handlers/image-fs-info.js';

export function imageServiceHandlers(store: ImageStore, puller: Puller, log: Logger): cri.ImageServiceHandlers {
  const unary = <Req, Res>(method: string, handler: (request: Req, signal: AbortSignal) => Promise<Res>) =>
    unaryCall(log, method, toStatusError, handler);
  return {
    PullImage: unary('PullImage', (req: cri.PullImageRequest__Output, signal) => pullImage(puller, req, signal)),
    ImageStatus: unary('ImageStatus', (req: cri.ImageStatusRequest__Output) => imageStatus(store, req)),
    ListImages: unary('ListImages', (req: cri.ListImagesRequest__Output) => listImages(store, req)),
    RemoveImage: unary('RemoveImage', (req: cri.RemoveImageRequest__Output) => removeImage(store, log, req)),
    ImageFsInfo: unary('ImageFsInfo', () => imageFsInfo(store)),
    StreamImages: batchedStreamCall(
      log,
      'StreamImages',
      toStatusError,
      async (req: cri.StreamImagesRequest__Output) => (await listImages(store, { filter: req.filter })).images ?? [],
      (images): cri.StreamImagesResponse => ({ images }),
    ),
  };
}

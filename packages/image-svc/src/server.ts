import { batchedStreamCall, unaryCall, type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';
import type { Puller } from './puller.js';
import { toStatusError } from './errors.js';
import { imageFsInfoCall } from './calls/image-fs-info.js';
import { listImagesCall, streamImagesCall } from './calls/image-list.js';
import { pullImageCall } from './calls/image-pull.js';
import type { PullMetrics } from './pull-metrics.js';
import { removeImageCall } from './calls/image-remove.js';
import { imageStatusCall } from './calls/image-status.js';

/** The CRI ImageService: each call wired to its implementation in calls/, one file per call. */
export function imageService(store: ImageStore, puller: Puller, log: Logger, pullMetrics?: PullMetrics): cri.ImageServiceHandlers {
  const unary = <Req, Res>(method: string, implementation: (request: Req, signal: AbortSignal) => Promise<Res>) =>
    unaryCall(log, method, toStatusError, implementation);
  return {
    PullImage: unary('PullImage', (req: cri.PullImageRequest__Output, signal) => pullImageCall(puller, req, signal, pullMetrics)),
    ImageStatus: unary('ImageStatus', (req: cri.ImageStatusRequest__Output) => imageStatusCall(store, req)),
    ListImages: unary('ListImages', (req: cri.ListImagesRequest__Output) => listImagesCall(store, req)),
    RemoveImage: unary('RemoveImage', (req: cri.RemoveImageRequest__Output) => removeImageCall(store, log, req)),
    ImageFsInfo: unary('ImageFsInfo', () => imageFsInfoCall(store)),
    StreamImages: batchedStreamCall(
      log,
      'StreamImages',
      toStatusError,
      (req: cri.StreamImagesRequest__Output) => streamImagesCall(store, req),
      (images): cri.StreamImagesResponse => ({ images }),
    ),
  };
}

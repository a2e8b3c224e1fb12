import type { ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import { type Logger } from '@skiff/common';
import type { cri } from '@skiff/proto';
import type { ImageStore } from '@skiff/image-store';
import type { Puller } from './puller.js';
import { toStatusError } from './errors.js';
import { pullImage } from './handlers/pull-image.js';
import { imageStatus } from './handlers/image-status.js';
import { listImages } from './handlers/list-images.js';
import { removeImage } from './handlers/remove-image.js';
import { imageFsInfo } from './handlers/image-fs-info.js';

const STREAM_BATCH = 100;

/** Wraps a promise-returning handler: a cancelled call aborts its signal, every error gets its gRPC status. */
function unary<Req, Res>(log: Logger, method: string, handler: (request: Req, signal: AbortSignal) => Promise<Res>) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
    const abort = new AbortController();
    call.once('cancelled', () => abort.abort());
    const started = process.hrtime.bigint();
    handler(call.request, abort.signal).then(
      (response) => {
        log.debug({ method, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'call done');
        callback(null, response);
      },
      (err: unknown) => {
        const error = toStatusError(err, abort.signal);
        log.warn({ method, code: error.code, err: error.message }, 'call failed');
        callback({ code: error.code, details: error.message });
      },
    );
  };
}

export function imageServiceHandlers(store: ImageStore, puller: Puller, log: Logger): cri.ImageServiceHandlers {
  return {
    PullImage: unary(log, 'PullImage', (req: cri.PullImageRequest__Output, signal) => pullImage(puller, req, signal)),
    ImageStatus: unary(log, 'ImageStatus', (req: cri.ImageStatusRequest__Output) => imageStatus(store, req)),
    ListImages: unary(log, 'ListImages', (req: cri.ListImagesRequest__Output) => listImages(store, req)),
    RemoveImage: unary(log, 'RemoveImage', (req: cri.RemoveImageRequest__Output) => removeImage(store, log, req)),
    ImageFsInfo: unary(log, 'ImageFsInfo', () => imageFsInfo(store)),
    StreamImages: (call: ServerWritableStream<cri.StreamImagesRequest__Output, cri.StreamImagesResponse>) => {
      listImages(store, { filter: call.request.filter }).then(
        ({ images = [] }) => {
          for (let i = 0; i < images.length; i += STREAM_BATCH) call.write({ images: images.slice(i, i + STREAM_BATCH) });
          call.end();
        },
        (err: unknown) => {
          const error = toStatusError(err);
          call.destroy(Object.assign(new Error(error.message), { code: error.code, details: error.message }));
        },
      );
    },
  };
}

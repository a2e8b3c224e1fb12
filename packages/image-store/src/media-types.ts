import { StoreError } from './errors.js';

const TAR_LAYER_TYPES = new Set([
  'application/vnd.oci.image.layer.v1.tar',
  'application/vnd.oci.image.layer.v1.tar+gzip',
  'application/vnd.oci.image.layer.v1.tar+zstd',
  'application/vnd.oci.image.layer.nondistributable.v1.tar',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd',
  'application/vnd.docker.image.rootfs.diff.tar',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
  'application/vnd.docker.image.rootfs.diff.tar.zstd',
  'application/vnd.docker.image.rootfs.foreign.diff.tar',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
]);

/** Throws 'unsupported' for anything that is not a (possibly compressed) tar layer. */
export function assertSupportedLayerType(mediaType: string, digest: string): void {
  if (!TAR_LAYER_TYPES.has(mediaType)) {
    throw new StoreError(
      'unsupported',
      `layer ${digest} has media type ${JSON.stringify(mediaType)}, which is not a tar, tar+gzip or tar+zstd filesystem layer; Skiff cannot unpack it`,
    );
  }
}

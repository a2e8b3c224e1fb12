/**
 * Media types of OCI and Docker image content.
 *
 *   MediaTypes                          constants, OCI / Docker schema2 / Docker schema1
 *   type ManifestFormat = 'oci' | 'docker'
 *   type LayerCompression = 'gzip' | 'zstd' | 'none'
 *   layerMediaType(format, compression): string
 *   configMediaType(format), manifestMediaType(format), indexMediaType(format)
 */
export const MediaTypes = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociLayerZstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayer: 'application/vnd.docker.image.rootfs.diff.tar',
  dockerLayerGzip: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  dockerSchema1Signed: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  dockerSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
} as const;

export type ManifestFormat = 'oci' | 'docker';
export type LayerCompression = 'gzip' | 'zstd' | 'none';

export function layerMediaType(format: ManifestFormat, compression: LayerCompression): string {
  if (format === 'oci') {
    if (compression === 'gzip') return MediaTypes.ociLayerGzip;
    if (compression === 'zstd') return MediaTypes.ociLayerZstd;
    return MediaTypes.ociLayer;
  }
  if (compression === 'gzip') return MediaTypes.dockerLayerGzip;
  if (compression === 'none') return MediaTypes.dockerLayer;
  throw new Error('Docker schema2 has no media type for zstd layers');
}

export function configMediaType(format: ManifestFormat): string {
  return format === 'oci' ? MediaTypes.ociConfig : MediaTypes.dockerConfig;
}

export function manifestMediaType(format: ManifestFormat): string {
  return format === 'oci' ? MediaTypes.ociManifest : MediaTypes.dockerManifest;
}

export function indexMediaType(format: ManifestFormat): string {
  return format === 'oci' ? MediaTypes.ociIndex : MediaTypes.dockerManifestList;
}

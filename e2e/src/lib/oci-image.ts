/**
 * OCI / Docker schema2 image content: config, manifest and index blobs.
 *
 *   interface Platform, ContainerConfig, HistoryEntry, ImageConfigFile
 *   interface ImageManifest, IndexManifest, Descriptor
 *   interface LayerDescriptor (Layer + mediaType)
 *   interface Image      { kind: 'image', format, platform, manifest, config, layers, configJson, manifestJson }
 *   interface ImageIndex { kind: 'index', format, index, indexJson, images }
 *   type ImageContent = Image | ImageIndex
 *   hostPlatform(): Platform
 *   buildImageConfig(options): ImageConfigFile                       pure
 *   buildImage(options: BuildImageOptions): Promise<Image>            writes config + manifest blobs
 *   buildIndex(images, { blobDir, format?, annotations? }): Promise<ImageIndex>
 *   writeJsonBlob(blobDir, value, mediaType): Promise<StoredBlob>     for hand-made manifests
 *   descriptorOf(blob): Descriptor
 *
 * Layers come from layer-builder.ts; all blobs live in a blob directory
 * (blob-dir.ts). The same layers can be described with OCI or Docker schema2
 * media types by choosing `format`.
 */
import { writeBlob, type StoredBlob } from './blob-dir.js';
import type { Layer } from './layer-builder.js';
import {
  configMediaType,
  indexMediaType,
  layerMediaType,
  manifestMediaType,
  type ManifestFormat,
} from './media-types.js';

export interface Platform {
  architecture: string;
  os: string;
  variant?: string;
}

export interface ContainerConfig {
  User?: string;
  ExposedPorts?: Record<string, Record<string, never>>;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  Volumes?: Record<string, Record<string, never>>;
  WorkingDir?: string;
  Labels?: Record<string, string>;
  StopSignal?: string;
}

export interface HistoryEntry {
  created?: string;
  created_by?: string;
  author?: string;
  comment?: string;
  empty_layer?: boolean;
}

export interface ImageConfigFile {
  created?: string;
  architecture: string;
  os: string;
  variant?: string;
  config: ContainerConfig;
  rootfs: { type: 'layers'; diff_ids: string[] };
  history?: HistoryEntry[];
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  schemaVersion: 2;
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

export interface IndexManifest {
  schemaVersion: 2;
  mediaType: string;
  manifests: Descriptor[];
  annotations?: Record<string, string>;
}

export interface LayerDescriptor extends Layer {
  mediaType: string;
}

export interface Image {
  kind: 'image';
  format: ManifestFormat;
  platform: Platform;
  manifest: StoredBlob;
  config: StoredBlob;
  layers: LayerDescriptor[];
  configJson: ImageConfigFile;
  manifestJson: ImageManifest;
}

export interface ImageIndex {
  kind: 'index';
  format: ManifestFormat;
  index: StoredBlob;
  indexJson: IndexManifest;
  images: Image[];
}

export type ImageContent = Image | ImageIndex;

export const DEFAULT_CREATED = '2024-01-01T00:00:00Z';

export function hostPlatform(): Platform {
  const arch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };
  return { architecture: arch[process.arch] ?? process.arch, os: 'linux' };
}

export function descriptorOf(blob: Pick<StoredBlob, 'mediaType' | 'digest' | 'size'>): Descriptor {
  return { mediaType: blob.mediaType, digest: blob.digest, size: blob.size };
}

export async function writeJsonBlob(blobDir: string, value: unknown, mediaType: string): Promise<StoredBlob> {
  return writeBlob(blobDir, Buffer.from(JSON.stringify(value), 'utf8'), mediaType);
}

export interface ImageConfigOptions {
  platform?: Platform;
  config?: ContainerConfig;
  diffIds: string[];
  created?: string;
  /** Defaults to one entry per layer, described by `layerComments` when given. */
  history?: HistoryEntry[];
  layerComments?: string[];
}

export function buildImageConfig(options: ImageConfigOptions): ImageConfigFile {
  const platform = options.platform ?? hostPlatform();
  const created = options.created ?? DEFAULT_CREATED;
  const history =
    options.history ??
    options.diffIds.map((_, i) => ({ created, created_by: options.layerComments?.[i] ?? `layer ${i + 1}` }));
  const file: ImageConfigFile = {
    created,
    architecture: platform.architecture,
    os: platform.os,
    config: options.config ?? {},
    rootfs: { type: 'layers', diff_ids: options.diffIds },
    history,
  };
  if (platform.variant !== undefined) file.variant = platform.variant;
  return file;
}

export interface BuildImageOptions {
  blobDir: string;
  layers: Layer[];
  format?: ManifestFormat;
  platform?: Platform;
  config?: ContainerConfig;
  created?: string;
  history?: HistoryEntry[];
  layerComments?: string[];
  annotations?: Record<string, string>;
}

export async function buildImage(options: BuildImageOptions): Promise<Image> {
  const format = options.format ?? 'oci';
  const platform = options.platform ?? hostPlatform();
  const configJson = buildImageConfig({
    platform,
    config: options.config,
    diffIds: options.layers.map((layer) => layer.diffId),
    created: options.created,
    history: options.history,
    layerComments: options.layerComments,
  });
  const config = await writeJsonBlob(options.blobDir, configJson, configMediaType(format));
  const layers = options.layers.map((layer) => ({ ...layer, mediaType: layerMediaType(format, layer.compression) }));
  const manifestJson: ImageManifest = {
    schemaVersion: 2,
    mediaType: manifestMediaType(format),
    config: descriptorOf(config),
    layers: layers.map(descriptorOf),
  };
  if (options.annotations !== undefined) manifestJson.annotations = options.annotations;
  const manifest = await writeJsonBlob(options.blobDir, manifestJson, manifestJson.mediaType);
  return { kind: 'image', format, platform, manifest, config, layers, configJson, manifestJson };
}

export interface BuildIndexOptions {
  blobDir: string;
  format?: ManifestFormat;
  annotations?: Record<string, string>;
}

export async function buildIndex(images: Image[], options: BuildIndexOptions): Promise<ImageIndex> {
  const format = options.format ?? 'oci';
  for (const image of images) {
    if (image.format !== format) throw new Error(`index of format ${format} cannot list a ${image.format} manifest`);
  }
  const indexJson: IndexManifest = {
    schemaVersion: 2,
    mediaType: indexMediaType(format),
    manifests: images.map((image) => ({ ...descriptorOf(image.manifest), platform: { ...image.platform } })),
  };
  if (options.annotations !== undefined) indexJson.annotations = options.annotations;
  const index = await writeJsonBlob(options.blobDir, indexJson, indexJson.mediaType);
  return { kind: 'index', format, index, indexJson, images };
}

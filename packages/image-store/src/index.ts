export { ImageStore, type ImageStoreOptions, type LayerToIngest, type LayerStreamOpener } from './image-store.js';
export { StoreError, type StoreErrorKind } from './errors.js';
export { chainIds } from './chain-id.js';
export type { Descriptor, Platform, LayerRecord, ImageRecord, OciImageConfig, SnapshotMeta } from './types.js';
export type { ImageRecordInput } from './image-index.js';
export type { GcResult } from './garbage-collector.js';
export { InvalidReferenceError } from '@skiff/reference';
export type { Lease } from './leases.js';
export { DEFAULT_EXTRACTION_LIMITS, MAX_PATH_BYTES, type ExtractionLimits, type FreeSpaceReader } from './limits.js';

import { promises as fs } from 'node:fs';

/**
 * What one layer may cost while it is unpacked, before and after its digest is known. Each limit
 * is named after the configuration key that sets it, so an error can tell an operator what to raise.
 */
export interface ExtractionLimits {
  /** image.max_layer_bytes: bytes of the uncompressed tar stream of one layer. */
  maxLayerBytes: number;
  /** image.max_layer_entries: tar headers of one layer (entries and their PAX / long-name headers). */
  maxLayerEntries: number;
  /** image.max_pax_header_bytes: PAX records in force for one entry (global ones accumulate). */
  maxPaxHeaderBytes: number;
  /** image.min_free_bytes: free space the store's filesystem keeps; a layer stops before taking it. */
  minFreeBytes: number;
}

export const DEFAULT_EXTRACTION_LIMITS: Readonly<ExtractionLimits> = {
  maxLayerBytes: 32 * 1024 ** 3,
  maxLayerEntries: 1_000_000,
  maxPaxHeaderBytes: 1024 * 1024,
  minFreeBytes: 1024 ** 3,
};

/** Longest entry name or link target: Linux's PATH_MAX; a longer one could not be created anyway. */
export const MAX_PATH_BYTES = 4096;

export const LIMIT_KEYS: Record<keyof ExtractionLimits | 'path', string> = {
  maxLayerBytes: 'image.max_layer_bytes',
  maxLayerEntries: 'image.max_layer_entries',
  maxPaxHeaderBytes: 'image.max_pax_header_bytes',
  minFreeBytes: 'image.min_free_bytes',
  path: 'PATH_MAX',
};

/** A layer went over one of the limits; `limit` names it (see LIMIT_KEYS). */
export class LimitError extends Error {
  constructor(
    readonly limit: keyof ExtractionLimits | 'path',
    message: string,
  ) {
    super(message);
    this.name = 'LimitError';
  }
}

/** Bytes available to the store's writer on the filesystem holding `path`. */
export type FreeSpaceReader = (path: string) => Promise<number>;

export const statfsFreeBytes: FreeSpaceReader = async (path) => {
  const stats = await fs.statfs(path);
  return stats.bavail * stats.bsize;
};

/** Free space is read again after every this many bytes a layer writes. */
export const SPACE_CHECK_INTERVAL = 8 * 1024 * 1024;

/**
 * Keeps one layer's unpack within the free-space reserve: checked before it starts (with the
 * blob's size counted as already spent) and again every SPACE_CHECK_INTERVAL bytes written.
 */
export class SpaceReserve {
  private sinceCheck = 0;

  constructor(
    private readonly path: string,
    private readonly minFreeBytes: number,
    private readonly freeBytes: FreeSpaceReader,
  ) {}

  async check(spending = 0): Promise<void> {
    this.sinceCheck = 0;
    const free = await this.freeBytes(this.path);
    if (free - spending < this.minFreeBytes) {
      const need = spending > 0 ? ` and the layer needs ${spending} more` : '';
      throw new LimitError(
        'minFreeBytes',
        `the image store's filesystem has ${free} bytes free${need}, under the ${this.minFreeBytes}-byte reserve (${LIMIT_KEYS.minFreeBytes}); free some space or remove unused images`,
      );
    }
  }

  /** Counts bytes about to be written; a promise when it is time to read free space again. */
  spend(bytes: number): Promise<void> | undefined {
    this.sinceCheck += bytes;
    return this.sinceCheck >= SPACE_CHECK_INTERVAL ? this.check() : undefined;
  }
}

/** Validates limits passed in code (the configuration file is validated where it is read). */
export function resolveLimits(limits: Partial<ExtractionLimits> | undefined): ExtractionLimits {
  const resolved = { ...DEFAULT_EXTRACTION_LIMITS, ...limits };
  for (const [key, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`extraction limit ${key} must be a non-negative integer, got ${value}`);
  }
  return resolved;
}

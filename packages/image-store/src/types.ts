/** An OCI content descriptor (the subset the store needs). */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface LayerRecord {
  /** Digest of the layer blob as distributed (usually compressed); verified while it unpacked, not kept. */
  digest: string;
  mediaType: string;
  size: number;
  /** Digest of the uncompressed tar stream. */
  diffId: string;
  chainId: string;
}

export interface ImageRecord {
  /** Config digest "sha256:<hex>". */
  id: string;
  /** Normalized, e.g. "docker.io/library/busybox:latest". */
  repoTags: string[];
  /** "docker.io/library/busybox@sha256:<digest of what the tag resolved to: index or manifest>". */
  repoDigests: string[];
  /** The platform image manifest actually used. */
  manifestDigest: string;
  configSize: number;
  /** Bottom layer first. */
  layers: LayerRecord[];
  /** Config size + sum of layer blob sizes (the image as distributed; the layer blobs are not kept). */
  size: number;
  /** The config's User ("" when unset). */
  user: string;
  pinned: boolean;
  annotations: Record<string, string>;
  platform: Platform;
  /** ISO time the record was first written. */
  createdAt: string;
}

export interface OciImageConfig {
  architecture?: string;
  os?: string;
  variant?: string;
  config?: {
    User?: string;
    Env?: string[];
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
    WorkingDir?: string;
    Labels?: Record<string, string>;
    StopSignal?: string;
    ExposedPorts?: Record<string, object>;
    Volumes?: Record<string, object>;
  };
  rootfs: { type: string; diff_ids: string[] };
  history?: unknown[];
  created?: string;
}

/** What meta.json beside each snapshot's fs/ holds. */
export interface SnapshotMeta {
  diffId: string;
  chainId: string;
  /** Apparent bytes of the unpacked layer (regular file contents and symlink targets, each inode once). */
  size: number;
  /** Inodes the unpacked layer uses. */
  inodes: number;
  /**
   * The layer blob digests (as distributed, usually compressed) this tree was verified against:
   * the one it was unpacked from, or, in a store migrated from one that kept layer blobs, every
   * stored blob of it. Absent only in a migrated store's snapshots that no image named.
   */
  blobDigests?: string[];
  /**
   * True when the tree does not depend on the layers below it (no hard link into them had to be
   * copied in), so that it can be copied to make the same layer's snapshot under another parent.
   */
  standsAlone?: boolean;
}

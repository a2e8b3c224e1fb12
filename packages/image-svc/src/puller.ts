import { createHash } from 'node:crypto';
import { Semaphore, SingleFlight, StepTimer, type Logger } from '@skiff/common';
import { normalizeReference, tagReference, digestReference, parseReference, formatReference, type ImageReference } from '@skiff/reference';
import { RegistryClient, type AuthCredentials, type ResolvedImage } from '@skiff/registry';
import { chainIds, ImageStore, StoreError, type ImageRecord, type LayerRecord, type OciImageConfig } from '@skiff/image-store';

const MAX_CONFIG_BYTES = 8 * 1024 * 1024;

export interface PullRequest {
  reference: string;
  auth?: AuthCredentials;
  annotations: Record<string, string>;
  signal?: AbortSignal;
}

function credentialsKey(auth: AuthCredentials | undefined): string {
  if (!auth) return '';
  return createHash('sha256').update(JSON.stringify(auth)).digest('hex');
}

/**
 * Pulls an image into the store: resolve the manifest, store the config, download and unpack the layers
 * (bounded in parallel), then write the record. The record is the last thing written, so an interrupted
 * pull leaves nothing an image refers to.
 */
export class Puller {
  private readonly pulls = new SingleFlight<ImageRecord>();
  /** One limit for every pull together, so parallel pulls cannot multiply the node's downloads. */
  private readonly downloads: Semaphore;

  constructor(
    private readonly store: ImageStore,
    private readonly registry: RegistryClient,
    private readonly log: Logger,
    maxConcurrentDownloads: number,
    private pinnedImages: readonly ImageReference[],
  ) {
    this.downloads = new Semaphore(maxConcurrentDownloads);
  }

  /** Pinned references from a reloaded configuration; images pulled from now on are marked by them. */
  setPinnedImages(pinned: readonly ImageReference[]): void {
    this.pinnedImages = pinned;
  }

  /** Concurrent pulls of the same reference with the same credentials are done once. */
  pull(request: PullRequest): Promise<ImageRecord> {
    const ref = normalizeReference(request.reference);
    const key = `${formatReference(ref)}\0${credentialsKey(request.auth)}`;
    return this.pulls.run(key, () => this.pullOnce(ref, request));
  }

  private async pullOnce(ref: ImageReference, request: PullRequest): Promise<ImageRecord> {
    const started = Date.now();
    const timer = new StepTimer(this.log, 'pull', { image: formatReference(ref) });
    try {
      const { record, endpoint } = await this.pullSteps(ref, request, timer);
      timer.done();
      this.log.info({ image: formatReference(ref), id: record.id, endpoint, layers: record.layers.length, ms: Date.now() - started }, 'image pulled');
      return record;
    } catch (err) {
      timer.done('failed');
      throw err;
    }
  }

  private async pullSteps(ref: ImageReference, request: PullRequest, timer: StepTimer): Promise<{ record: ImageRecord; endpoint: string }> {
    const opts = { auth: request.auth, signal: request.signal };
    const resolved = await this.registry.resolve(ref, opts);
    timer.mark('resolve');
    const config = await this.storeConfig(resolved, request);
    timer.mark('config');
    const layers = this.layerRecords(resolved, config);

    await Promise.all(
      layers.map((layer) =>
        this.downloads.run(() =>
          this.store.ingestLayer(
            { desc: { mediaType: layer.mediaType, digest: layer.digest, size: layer.size }, diffId: layer.diffId, chainId: layer.chainId },
            () => this.registry.openBlob(resolved, { mediaType: layer.mediaType, digest: layer.digest, size: layer.size }, opts),
            request.signal ? { signal: request.signal } : {},
          ),
        ),
      ),
    );
    timer.mark('layers');

    const configDesc = resolved.manifest.config;
    const tag = tagReference(ref);
    const record = await this.store.addImage({
      id: configDesc.digest,
      repoTags: tag === undefined ? [] : [tag],
      repoDigests: [digestReference(ref, resolved.topDigest)],
      manifestDigest: resolved.manifestDigest,
      configSize: configDesc.size,
      layers,
      size: configDesc.size + layers.reduce((sum, l) => sum + l.size, 0),
      user: config.config?.User ?? '',
      pinned: this.isPinned(ref, resolved.topDigest),
      annotations: request.annotations,
      platform: resolved.platform,
    });
    timer.mark('record');
    return { record, endpoint: resolved.endpoint.host };
  }

  private async storeConfig(resolved: ResolvedImage, request: PullRequest): Promise<OciImageConfig> {
    const desc = resolved.manifest.config;
    if (!(await this.store.hasBlob(desc.digest))) {
      const bytes = await this.registry.fetchBlob(resolved, desc, { auth: request.auth, signal: request.signal, maxBytes: MAX_CONFIG_BYTES });
      await this.store.putBlob(desc, bytes);
    }
    const config = JSON.parse((await this.store.readBlob(desc.digest)).toString('utf8')) as OciImageConfig;
    if (!config.rootfs || !Array.isArray(config.rootfs.diff_ids)) {
      throw new StoreError('bad-layer', `image config ${desc.digest} has no rootfs.diff_ids`);
    }
    return config;
  }

  private layerRecords(resolved: ResolvedImage, config: OciImageConfig): LayerRecord[] {
    const { layers } = resolved.manifest;
    const diffIds = config.rootfs.diff_ids;
    if (layers.length !== diffIds.length) {
      throw new StoreError(
        'bad-layer',
        `manifest ${resolved.manifestDigest} lists ${layers.length} layers but its config lists ${diffIds.length} diff_ids`,
      );
    }
    const chain = chainIds(diffIds);
    return layers.map((desc, i) => ({ digest: desc.digest, mediaType: desc.mediaType, size: desc.size, diffId: diffIds[i]!, chainId: chain[i]! }));
  }

  private isPinned(ref: ImageReference, topDigest: string): boolean {
    return this.pinnedImages.some((p) => p.name === ref.name && ((p.tag !== undefined && p.tag === ref.tag) || p.digest === topDigest));
  }
}

/** Parses the configured pinned references once; a bad entry is a configuration error. */
export function parsePinnedImages(references: readonly string[]): ImageReference[] {
  return references.map((r) => {
    const ref = parseReference(r);
    if (ref.tag === undefined && ref.digest === undefined) ref.tag = 'latest';
    return ref;
  });
}

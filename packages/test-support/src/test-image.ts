import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createLogger } from '@skiff/common';
import { chainIds, ImageStore, type ImageRecord, type OciImageConfig } from '@skiff/image-store';
import { makeBusyboxRootfs } from './busybox-rootfs.js';

const execFileAsync = promisify(execFile);

function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** GNU tar of a directory's contents, uncompressed, as an image layer. */
async function tarDirectory(dir: string): Promise<Buffer> {
  const { stdout } = await execFileAsync('tar', ['--format=pax', '--numeric-owner', '-C', dir, '-c', '.'], {
    encoding: 'buffer',
    maxBuffer: 256 * 1024 * 1024,
  });
  return stdout;
}

/**
 * Writes a one-layer busybox image into the image store under `imagesRoot`, through the store's
 * own writer API (the image service normally does this), and returns its record.
 */
export async function addBusyboxImage(imagesRoot: string, tag: string, config: OciImageConfig['config'] = {}): Promise<ImageRecord> {
  const work = await fs.mkdtemp(join(tmpdir(), 'skiff-image-'));
  const store = await ImageStore.open(imagesRoot, { logger: createLogger('test-image', 'fatal'), writer: true });
  try {
    const rootfs = join(work, 'rootfs');
    await makeBusyboxRootfs(rootfs);
    const tar = await tarDirectory(rootfs);
    const diffId = sha256(tar);
    const chainId = chainIds([diffId])[0]!;
    const desc = { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: diffId, size: tar.length };
    await store.ingestLayer({ desc, diffId, chainId }, async () => Readable.from([tar]));
    const configBlob = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { Env: ['PATH=/bin'], Cmd: ['sh'], ...config },
        rootfs: { type: 'layers', diff_ids: [diffId] },
      } satisfies OciImageConfig),
    );
    const configDigest = sha256(configBlob);
    await store.putBlob({ mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: configBlob.length }, configBlob);
    const manifestDigest = sha256(`manifest of ${configDigest}`);
    const repo = tag.split(':')[0]!;
    return await store.addImage({
      id: configDigest,
      repoTags: [tag],
      repoDigests: [`${repo}@${manifestDigest}`],
      manifestDigest,
      configSize: configBlob.length,
      layers: [{ digest: desc.digest, mediaType: desc.mediaType, size: desc.size, diffId, chainId }],
      size: configBlob.length + desc.size,
      user: config.User ?? '',
      pinned: false,
      annotations: {},
      platform: { os: 'linux', architecture: 'amd64' },
    });
  } finally {
    await store.close();
    await fs.rm(work, { recursive: true, force: true });
  }
}

import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

const BLOCK = 512;

function header(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100, 8, 'ascii');
  h.write('0000000\0', 108, 8, 'ascii');
  h.write('0000000\0', 116, 8, 'ascii');
  h.write(size.toString(8).padStart(11, '0') + '\0', 124, 12, 'ascii');
  h.write('00000000000\0', 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii');
  h.write('0', 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

/** A ustar archive of regular files, enough for test layers. */
export function tarOf(files: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.from(content);
    parts.push(header(name, data.length), data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

export function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export interface TestImage {
  config: Buffer;
  layers: Buffer[];
  manifest: Buffer;
  manifestDigest: string;
  mediaType: string;
}

/** A small OCI (or Docker schema 2) image: gzip'd layers and a config naming their diff ids. */
export function buildImage(opts: { architecture: string; variant?: string; files: Record<string, string>[]; docker?: boolean }): TestImage {
  const tars = opts.files.map((f) => tarOf(f));
  const layers = tars.map((t) => gzipSync(t));
  const configJson: Record<string, unknown> = {
    architecture: opts.architecture,
    os: 'linux',
    config: { Cmd: ['/hello'] },
    rootfs: { type: 'layers', diff_ids: tars.map(sha256) },
  };
  if (opts.variant) configJson['variant'] = opts.variant;
  const config = Buffer.from(JSON.stringify(configJson));
  const mediaType = opts.docker ? 'application/vnd.docker.distribution.manifest.v2+json' : 'application/vnd.oci.image.manifest.v1+json';
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType,
      config: {
        mediaType: opts.docker ? 'application/vnd.docker.container.image.v1+json' : 'application/vnd.oci.image.config.v1+json',
        digest: sha256(config),
        size: config.length,
      },
      layers: layers.map((l) => ({
        mediaType: opts.docker ? 'application/vnd.docker.image.rootfs.diff.tar.gzip' : 'application/vnd.oci.image.layer.v1.tar+gzip',
        digest: sha256(l),
        size: l.length,
      })),
    }),
  );
  return { config, layers, manifest, manifestDigest: sha256(manifest), mediaType };
}

/**
 * Floors of the image calls, done by hand on the same machine in the same run:
 *   - the blobs of a pushed image fetched from the registry with curl (download only), fetched
 *     and extracted with `curl | tar -x` (download and unpack, no verification), then `sync -f`,
 *     and the same with each layer verified on the way, as a pull must: the compressed bytes'
 *     and the uncompressed tar's sha256 (`openssl dgst` on `tee`'d copies) against the layer's
 *     digest and diff ID;
 *   - a crash-safe replacement of a small index file (write, fsync, rename, fsync of the directory),
 *     which is what answering RemoveImage must at least do.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getTestImage, type TestImageName } from '@skiff/e2e/lib';

export interface RegistryBlobs {
  /** http://host:port/v2/<repo>/blobs/ */
  base: string;
  layers: { digest: string; diffId: string; mediaType: string }[];
}

export async function registryBlobs(registryUrl: string, repo: string, name: TestImageName): Promise<RegistryBlobs> {
  const content = await getTestImage(name);
  if (content.kind !== 'image') throw new Error(`${name} is not a single image`);
  return { base: `${registryUrl}/v2/${repo}/blobs/`, layers: content.layers.map((l) => ({ digest: l.digest, diffId: l.diffId, mediaType: l.mediaType })) };
}

function shell(script: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`bash -c ${script} exited with ${code}: ${stderr}`))));
  });
}

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Every layer blob downloaded at once with curl into `dir`. */
export async function curlBlobs(blobs: RegistryBlobs, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const jobs = blobs.layers.map((l, i) => `curl -sSf -o ${quote(join(dir, `layer-${i}`))} ${quote(blobs.base + l.digest)} &`);
  await shell(`${jobs.join('\n')}\nfail=0; for j in $(jobs -p); do wait $j || fail=1; done; exit $fail`);
  await rm(dir, { recursive: true, force: true });
}

/** Every layer downloaded and extracted at once (`curl | tar -x`, gzip or plain), one directory each, then one `sync -f`. */
export async function curlAndExtract(blobs: RegistryBlobs, dir: string): Promise<void> {
  const jobs: string[] = [];
  for (const [i, l] of blobs.layers.entries()) {
    const target = join(dir, `layer-${i}`);
    await mkdir(target, { recursive: true });
    const decompress = l.mediaType.endsWith('gzip') ? 'z' : '';
    jobs.push(`(curl -sSf ${quote(blobs.base + l.digest)} | tar -x${decompress}f - -C ${quote(target)}) &`);
  }
  await shell(`${jobs.join('\n')}\nfail=0; for j in $(jobs -p); do wait $j || fail=1; done; sync -f ${quote(dir)}; exit $fail`);
  await rm(dir, { recursive: true, force: true });
}

/**
 * curlAndExtract with every layer verified as it streams: `tee` hands the compressed bytes and the
 * uncompressed tar to an `openssl dgst -sha256` each (through FIFOs), and the sums must be the
 * layer's digest and diff ID. OpenSSL hashes with the processor's SHA instructions; coreutils'
 * `sha256sum` does not and takes 4-5 times as long, which would make the floor too easy.
 */
export async function curlVerifyAndExtract(blobs: RegistryBlobs, dir: string): Promise<void> {
  const jobs: string[] = [];
  for (const [i, l] of blobs.layers.entries()) {
    const target = join(dir, `layer-${i}`);
    await mkdir(target, { recursive: true });
    const [blob, tar] = [join(dir, `blob-${i}`), join(dir, `tar-${i}`)].map(quote);
    const decompress = l.mediaType.endsWith('gzip') ? `| gzip -dc | tee ${tar} ` : `| tee ${tar} `;
    jobs.push(
      `(mkfifo ${blob} ${tar}; openssl dgst -sha256 -r < ${blob} > ${blob}.sum & openssl dgst -sha256 -r < ${tar} > ${tar}.sum & ` +
        `curl -sSf ${quote(blobs.base + l.digest)} | tee ${blob} ${decompress}| tar -xf - -C ${quote(target)}; wait) &`,
    );
  }
  await shell(`${jobs.join('\n')}\nfail=0; for j in $(jobs -p); do wait $j || fail=1; done; sync -f ${quote(dir)}; exit $fail`);
  for (const [i, l] of blobs.layers.entries()) {
    for (const [file, want] of [[`blob-${i}.sum`, l.digest], [`tar-${i}.sum`, l.diffId]] as const) {
      const got = `sha256:${(await readFile(join(dir, file), 'utf8')).split(' ')[0]}`;
      if (got !== want) throw new Error(`layer ${i}: ${file} is ${got}, not ${want}`);
    }
  }
  await rm(dir, { recursive: true, force: true });
}

/** Replaces `dir/index.json` crash-safely with `bytes` bytes: write a temp file, fsync, rename, fsync the directory. */
export async function indexCommit(dir: string, bytes: number): Promise<void> {
  const tmp = join(dir, 'index.json.tmp');
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(Buffer.alloc(bytes, 0x20));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, join(dir, 'index.json'));
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

export async function prepareIndexDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'index.json'), '{}');
}

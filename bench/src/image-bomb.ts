/**
 * image-svc refusing a decompression bomb: a gzip layer of 1 GiB of zeros (about 1 MiB compressed)
 * pulled with image.max_layer_bytes at 256 MiB. Prints image-svc's peak RSS and the image store's
 * peak disk use during the refused pull, beside their floors: image-svc's RSS idle, and the most
 * the limits let an unverified layer write (the limit plus the blob).
 *
 *   node bench/dist/image-bomb.js [--bomb-mib N] [--limit-mib M]
 */
import { lstat, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { buildImage, buildLayer, makeTempDir, pushImage, removeDir, startRegistry, startSkiff } from '@skiff/e2e/lib';
import { mib, ms, printTable, rssBytes, timed } from './stats.js';

const MiB = 1024 * 1024;

function* zeroChunks(size: number): Generator<Buffer> {
  for (let offset = 0; offset < size; offset += MiB) yield Buffer.alloc(Math.min(MiB, size - offset));
}

/** Bytes allocated under `dir` (st_blocks, so sparse or partly written files count as they are). */
async function diskUse(dir: string): Promise<number> {
  let total = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const path = join(dir, name);
    try {
      const stats = await lstat(path);
      total += stats.blocks * 512;
      if (stats.isDirectory()) total += await diskUse(path);
    } catch {
      // removed while walking
    }
  }
  return total;
}

async function peakRss(pid: number): Promise<number> {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'bomb-mib': { type: 'string', default: '1024' }, 'limit-mib': { type: 'string', default: '256' } } });
  const bombBytes = Number(values['bomb-mib']) * MiB;
  const limitBytes = Number(values['limit-mib']) * MiB;
  const work = await makeTempDir('skiff-bench-bomb');
  const registry = await startRegistry();
  try {
    const layer = await buildLayer([{ type: 'file', name: 'bomb', mode: 0o644, content: { size: bombBytes, open: () => Readable.from(zeroChunks(bombBytes)) } }], {
      blobDir: work,
      gzipLevel: 9,
    });
    const image = await buildImage({ blobDir: work, layers: [layer], config: { Cmd: ['sh'] } });
    await pushImage(registry, 'skiff/bomb', 'latest', image);

    const skiff = await startSkiff({ imageConfig: `max_layer_bytes = ${limitBytes}` });
    try {
      const images = skiff.imageClient();
      const pid = (await skiff.servicePid('image-svc'))!;
      const store = join(skiff.root, 'images');
      const rssIdle = await rssBytes(pid);
      const diskBefore = await diskUse(store);

      let peakDisk = diskBefore;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peakDisk = Math.max(peakDisk, await diskUse(store));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      let refusal = '';
      const elapsed = await timed(() =>
        callUnary(images, 'PullImage', { image: { image: `${registry.host}/skiff/bomb:latest` } }, { timeoutMs: 600_000 }).then(
          () => (refusal = 'accepted (not refused)'),
          (err: { code?: number; details?: string }) => (refusal = `code ${err.code}: ${err.details ?? ''}`),
        ),
      );
      sampling = false;
      await sampler;
      const rssPeak = await peakRss(pid);
      const diskAfter = await diskUse(store);

      printTable(`image-svc refusing a ${mib(bombBytes)} gzip bomb (${mib(layer.size)} compressed), image.max_layer_bytes = ${mib(limitBytes)}`, [
        ['outcome', refusal.length > 140 ? `${refusal.slice(0, 140)}...` : refusal],
        ['time to refuse', ms(elapsed)],
        ['image-svc peak RSS (VmHWM) during the pull', mib(rssPeak)],
        ['floor: image-svc RSS idle before the pull', mib(rssIdle)],
        ['store peak disk use during the pull (sampled every 20 ms)', mib(peakDisk - diskBefore)],
        ['floor: the most the limits allow (limit + blob)', mib(limitBytes + layer.size)],
        ['store disk use after the refusal (new bytes)', mib(diskAfter - diskBefore)],
      ]);
    } finally {
      await skiff.stop();
    }
  } finally {
    await registry.stop();
    await removeDir(work);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

/**
 * image-svc benchmark: cold pull of a 5-layer ~100 MB image beside `skopeo copy` of the same image
 * into an OCI layout (same registry, same run); per pull, the bytes image-svc wrote (its
 * /proc/<pid>/io write_bytes) and the image's disk use in the store (`du` of the store with the
 * image minus without it), beside the image's unpacked size (its snapshots' meta.json sizes) and
 * its compressed size; ListImages latency with 500 images; image-svc RSS.
 *
 *   node bench/dist/image-service.js [--runs N] [--list-images M]
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRegistry, pushTestImage, getTestImage, imageCacheDir, buildImage, pushImage, RegistryClient, startSkiff, makeTempDir } from '@skiff/e2e/lib';
import { median, mib, ms, percentile, printTable, rssBytes, timed } from './stats.js';

const run = promisify(execFile);

/** Bytes this process (all its threads) caused to be written to storage, from /proc/<pid>/io. */
async function writeBytes(pid: number): Promise<number> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  const value = /^write_bytes:\s+(\d+)$/m.exec(io)?.[1];
  if (value === undefined) throw new Error(`no write_bytes for pid ${pid}`);
  return Number(value);
}

/** Disk use (allocated blocks) of a tree, from `du`; undefined while a collection removes files under it. */
async function diskUse(path: string): Promise<number | undefined> {
  try {
    const { stdout } = await run('du', ['-s', '--block-size=1', path]);
    return Number(stdout.split('\t')[0]);
  } catch {
    return undefined;
  }
}

/** The image's unpacked size: the apparent bytes of its layers as the store's snapshot meta.json files count them. */
async function unpackedBytes(snapshots: readonly string[]): Promise<number> {
  let total = 0;
  for (const fsDir of snapshots) total += (JSON.parse(await readFile(join(fsDir, '..', 'meta.json'), 'utf8')) as { size: number }).size;
  return total;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, 'list-images': { type: 'string', default: '500' } } });
  const runs = Number(values.runs);
  const listImages = Number(values['list-images']);
  const registry = await startRegistry();
  const skiff = await startSkiff();
  const work = await makeTempDir('skiff-bench-image');
  try {
    const images = skiff.imageClient();
    const pid = (await skiff.servicePid('image-svc'))!;
    const rssIdle = await rssBytes(pid);

    const bench5 = await pushTestImage(registry, 'bench5');
    const content = await getTestImage('bench5');
    const totalBytes = content.kind === 'image' ? content.layers.reduce((s, l) => s + l.size, 0) : 0;

    const store = join(skiff.root, 'images');
    const skiffTimes: number[] = [];
    const skopeoTimes: number[] = [];
    const written: number[] = [];
    const used: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Alternate the two so neither always runs on a warmer page cache.
      await callUnary(images, 'RemoveImage', { image: { image: bench5.reference } });
      // The removal's collection runs after its answer: du waits until it has stopped changing the store.
      const without = await settledDiskUse(store);
      const writtenBefore = await writeBytes(pid);
      skiffTimes.push(await timed(() => callUnary(images, 'PullImage', { image: { image: bench5.reference } }, { timeoutMs: 300_000 })));
      written.push((await writeBytes(pid)) - writtenBefore);
      used.push((await settledDiskUse(store)) - without);
      const layout = join(work, `oci-${i}`);
      skopeoTimes.push(
        await timed(() => run('skopeo', ['copy', '--quiet', '--src-tls-verify=false', `docker://${bench5.reference}`, `oci:${layout}:bench5`])),
      );
      await rm(layout, { recursive: true, force: true });
    }
    const rssAfterPulls = await rssBytes(pid);
    const { info } = await callUnary(images, 'ImageStatus', { image: { image: bench5.reference }, verbose: true });
    const unpacked = await unpackedBytes((JSON.parse(info['info'] ?? '{}') as { snapshots: string[] }).snapshots);

    // 500 distinct images sharing the busybox layer: distinct configs, one layer blob.
    const busybox = await getTestImage('busybox');
    if (busybox.kind !== 'image') throw new Error('busybox should be a single image');
    const client = new RegistryClient(registry.url);
    for (let i = 0; i < listImages; i++) {
      const image = await buildImage({ blobDir: join(imageCacheDir(), 'blobs'), layers: busybox.layers, config: { Cmd: ['sh'], Labels: { n: String(i) } } });
      await pushImage(registry, 'skiff/many', `n${i}`, image, { client });
      await callUnary(images, 'PullImage', { image: { image: `${registry.host}/skiff/many:n${i}` } }, { timeoutMs: 60_000 });
    }
    const listTimes: number[] = [];
    for (let i = 0; i < 300; i++) listTimes.push(await timed(() => callUnary(images, 'ListImages', {})));
    const listed = (await callUnary(images, 'ListImages', {})).images.length;
    const rssWithImages = await rssBytes(pid);

    printTable(`Cold pull: bench5, 5 layers, ${mib(totalBytes)} compressed, median of ${runs}`, [
      ['skiff PullImage (download + verify + unpack)', ms(median(skiffTimes))],
      ['skopeo copy to an OCI layout (download only)', ms(median(skopeoTimes))],
      ['ratio skiff / skopeo (target <= 1.0)', (median(skiffTimes) / median(skopeoTimes)).toFixed(2)],
      ['all skiff runs', skiffTimes.map(ms).join(', ')],
      ['all skopeo runs', skopeoTimes.map(ms).join(', ')],
    ]);
    printTable(`Bytes per bench5 pull, median of ${runs}`, [
      ['compressed layers', mib(totalBytes)],
      ['unpacked size (the layers\' files)', mib(unpacked)],
      ['written by image-svc during the pull', `${mib(median(written))} (${(median(written) / unpacked).toFixed(2)}x unpacked; target <= 1.1x)`],
      ['disk use of the image in the store', `${mib(median(used))} (${(median(used) / unpacked).toFixed(2)}x unpacked)`],
      ['all runs: written', written.map(mib).join(', ')],
      ['all runs: disk use', used.map(mib).join(', ')],
    ]);
    printTable(`ListImages with ${listed} images, 300 calls over the unix socket`, [
      ['p50 (target < 5 ms)', ms(percentile(listTimes, 50))],
      ['p99', ms(percentile(listTimes, 99))],
    ]);
    printTable('image-svc RSS (target < 80 MB)', [
      ['idle after start', mib(rssIdle)],
      ['after the bench5 pulls', mib(rssAfterPulls)],
      [`with ${listed} images`, mib(rssWithImages)],
    ]);
  } finally {
    await skiff.stop();
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** The store's disk use once a removal's collection (after RemoveImage answered) has stopped changing it. */
async function settledDiskUse(store: string): Promise<number> {
  let last = await diskUse(store);
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await diskUse(store);
    if (now !== undefined && now === last) return now;
    last = now;
  }
  throw new Error(`the disk use of ${store} did not settle`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

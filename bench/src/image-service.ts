/**
 * image-svc benchmark: cold pull of a 5-layer ~100 MB image beside `skopeo copy` of the same image
 * into an OCI layout (same registry, same run); ListImages latency with 500 images; image-svc RSS.
 *
 *   node bench/dist/image-service.js [--runs N]
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRegistry, pushTestImage, getTestImage, imageCacheDir, buildImage, pushImage, RegistryClient, startSkiff, makeTempDir } from '@skiff/e2e/lib';
import { median, mib, ms, percentile, printTable, rssBytes, timed } from './stats.js';

const run = promisify(execFile);
const LIST_IMAGES = 500;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
  const runs = Number(values.runs);
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

    const skiffTimes: number[] = [];
    const skopeoTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Alternate the two so neither always runs on a warmer page cache.
      await callUnary(images, 'RemoveImage', { image: { image: bench5.reference } });
      skiffTimes.push(await timed(() => callUnary(images, 'PullImage', { image: { image: bench5.reference } }, { timeoutMs: 300_000 })));
      const layout = join(work, `oci-${i}`);
      skopeoTimes.push(
        await timed(() => run('skopeo', ['copy', '--quiet', '--src-tls-verify=false', `docker://${bench5.reference}`, `oci:${layout}:bench5`])),
      );
      await rm(layout, { recursive: true, force: true });
    }
    const rssAfterPulls = await rssBytes(pid);

    // 500 distinct images sharing the busybox layer: distinct configs, one layer blob.
    const busybox = await getTestImage('busybox');
    if (busybox.kind !== 'image') throw new Error('busybox should be a single image');
    const client = new RegistryClient(registry.url);
    for (let i = 0; i < LIST_IMAGES; i++) {
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

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

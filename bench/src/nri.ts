/**
 * The cost of NRI on pod start (RunPodSandbox + CreateContainer + StartContainer of busybox, the pod
 * removed after each, untimed): two Skiff instances side by side, one with `[nri] enable = false`,
 * one with NRI on; pods started alternately on each, first with no plugin registered, then with the
 * logger plugin (tools/nri-plugins, on containerd/nri's plugin stub) subscribed to every event.
 *
 *   node bench/dist/nri.js [--pods N]     N pods per configuration (default 30)
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { makeTempDir, nriPluginBinary, removeDir, startNriPlugin, startRuntimeHarness, type NriPluginProcess, type RuntimeHarness } from '@skiff/e2e/lib';
import { median, ms, percentile, printTable, timed } from './stats.js';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '30' } } });
const pods = Number(values.pods);

async function podStart(h: RuntimeHarness): Promise<number> {
  let podId = '';
  const took = await timed(async () => {
    const pod = await h.runPod();
    podId = pod.id;
    await h.runContainer(pod, 'app');
  });
  await callUnary(h.runtime, 'StopPodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 });
  await callUnary(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: podId }, { timeoutMs: 60_000 });
  return took;
}

async function main(): Promise<void> {
  const binary = await nriPluginBinary();
  const dir = await makeTempDir('skiff-bench-nri');
  const off = await startRuntimeHarness({ skiff: { nriConfig: 'enable = false', logLevel: 'info' } });
  const on = await startRuntimeHarness({ skiff: { nriConfig: `socket = "${join(dir, 'nri.sock')}"`, logLevel: 'info' } });
  let logger: NriPluginProcess | undefined;
  try {
    // Warm both: the first pods pay for caches.
    for (let i = 0; i < 3; i++) await Promise.all([podStart(off), podStart(on)]).catch(() => undefined);
    const samples = { off: [] as number[], none: [] as number[], offBeside: [] as number[], logger: [] as number[] };
    for (let i = 0; i < pods; i++) {
      samples.off.push(await podStart(off));
      samples.none.push(await podStart(on));
    }
    logger = await startNriPlugin(binary, join(dir, 'nri.sock'), ['-mode', 'logger', '-name', 'logger', '-idx', '10', '-log', join(dir, 'events.log')], () => on.skiff.output().includes('NRI plugin registered'));
    for (let i = 0; i < pods; i++) {
      samples.offBeside.push(await podStart(off));
      samples.logger.push(await podStart(on));
    }
    const row = (label: string, s: number[]): [string, string] => [label, `${ms(median(s))} / ${ms(percentile(s, 95))}`];
    printTable(`NRI: pod start p50 / p95, ${pods} pods each, alternately`, [
      row('NRI off', samples.off),
      row('NRI on, no plugin', samples.none),
      row('NRI off (beside the logger run)', samples.offBeside),
      row('NRI on, logger plugin (every event)', samples.logger),
    ]);
  } finally {
    await logger?.stop();
    await on.stop();
    await off.stop();
    await removeDir(dir);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

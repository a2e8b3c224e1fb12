/**
 * Runs the CRI validation suite (critest, sigs.k8s.io/cri-tools) against a Skiff instance of its
 * own. scripts/critest.sh is how a person runs it.
 *
 *   node critest.js --critest-bin DIR [--handler runsc] [--focus RE] [--skip RE] [--procs N] [--report-dir DIR]
 *
 * Builds the images critest pulls (critest-images.ts), pushes them to a local registry, starts
 * Skiff with registries.conf making that registry the mirror of their upstream registries, and runs
 * critest on Skiff's sockets, several specs at once (critest's -parallel, through the ginkgo command
 * beside it), with JSON and JUnit reports in the report directory. The figures come from the JSON
 * report; specs that cannot run here (critest-run.ts) are left out and counted as skipped. The
 * shared memory segments its host IPC specs make on the host are removed after it. The last
 * line printed is
 *   critest: N passed, N failed, N skipped
 * and the exit status is 0 when no spec failed.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CRITEST_IMAGES, critestRegistriesConf, getCritestImage, pushCritestImages } from '../lib/critest-images.js';
import { startRegistry } from '../lib/registry.js';
import { removeAllPods } from '../lib/remove-pods.js';
import { mountsUnder } from '../lib/runtime-inventory.js';
import { startSkiff, type SkiffInstance } from '../lib/skiff-instance.js';
import { removeDir } from '../lib/tmp.js';
import { critestArgs, CRITEST_UNRUNNABLE_SPECS, leftSharedMemory, parseCritestOptions, UsageError, type CritestEndpoints, type CritestOptions } from './critest-run.js';
import { runSuiteProcess } from './suite-process.js';
import { selectedSpecNames, suiteFigures, summaryLine, type SpecOutcome } from './suite-report.js';
import { unrunnableReason } from './unrunnable-specs.js';

const run = promisify(execFile);
const SHM_TABLE = '/proc/sysvipc/shm';

function log(message: string): void {
  process.stdout.write(`critest: ${message}\n`);
}

function endpoints(skiff: SkiffInstance): CritestEndpoints {
  return { runtimeSocket: skiff.runtimeSocket, imageSocket: skiff.imageSocket, nriSocket: join(skiff.runDir, 'nri.sock') };
}

/** The selected specs that cannot run here, as skipped outcomes with their reason. */
async function unrunnableSelected(options: CritestOptions, skiff: SkiffInstance): Promise<SpecOutcome[]> {
  await mkdir(join(options.reportDir, 'selection'), { recursive: true });
  await run(join(options.critestBin, 'critest'), critestArgs(options, endpoints(skiff), { dryRun: true }), {
    cwd: join(options.reportDir, 'selection'),
    maxBuffer: 64 * 1024 * 1024,
  });
  const selected = selectedSpecNames(await readFile(join(options.reportDir, 'selection', 'report.json'), 'utf8'));
  return selected.flatMap((name) => {
    const reason = unrunnableReason(name, CRITEST_UNRUNNABLE_SPECS);
    return reason === undefined ? [] : [{ name, state: 'skipped', message: `cannot run on this machine: ${reason}` }];
  });
}

async function runCritest(options: CritestOptions, skiff: SkiffInstance): Promise<number> {
  const args = critestArgs(options, endpoints(skiff));
  log(`critest ${args.join(' ')}`);
  // critest runs its parallel specs through the ginkgo command it finds on PATH.
  const env = { ...process.env, PATH: `${options.critestBin}:${process.env.PATH ?? ''}` };
  return runSuiteProcess(join(options.critestBin, 'critest'), args, { cwd: options.reportDir, env, logPath: join(options.reportDir, 'critest.log') });
}

/** Removes what critest left, keeps Skiff's log, stops Skiff and takes its directory away with its mounts (the netns directory's own). */
async function stopSkiff(skiff: SkiffInstance, options: CritestOptions): Promise<void> {
  await removeAllPods(skiff.runtimeSocket).catch((err: Error) => log(`removing the pods: ${err.message}`));
  await writeFile(join(options.reportDir, 'skiff.log'), skiff.output()).catch(() => undefined);
  await skiff.stop({ keepDir: true });
  for (const mount of (await mountsUnder(skiff.dir)).reverse()) await run('umount', ['--lazy', mount]).catch(() => undefined);
  await removeDir(skiff.dir);
}

async function main(options: CritestOptions): Promise<number> {
  for (const tool of ['critest', 'ginkgo']) {
    if (!existsSync(join(options.critestBin, tool))) throw new UsageError(`${join(options.critestBin, tool)} is missing: run scripts/critest.sh --build`);
  }
  await mkdir(options.reportDir, { recursive: true });
  log('building the images');
  for (const spec of CRITEST_IMAGES) await getCritestImage(spec);

  const registry = await startRegistry();
  let skiff: SkiffInstance | undefined;
  try {
    log(`pushing the images to the registry at ${registry.host}`);
    await pushCritestImages(registry);
    skiff = await startSkiff({ registriesConf: critestRegistriesConf(registry.host), logLevel: 'info' });
    const unrunnable = await unrunnableSelected(options, skiff);
    const segmentsBefore = await readFile(SHM_TABLE, 'utf8');
    const code = await runCritest(options, skiff);
    for (const id of leftSharedMemory(segmentsBefore, await readFile(SHM_TABLE, 'utf8'))) await run('ipcrm', ['-m', String(id)]).catch(() => undefined);
    const reportPath = join(options.reportDir, 'report.json');
    if (!existsSync(reportPath)) {
      log(`critest did not report (exit code ${code}); see ${options.reportDir}`);
      return code === 0 ? 1 : code;
    }
    const figures = suiteFigures(await readFile(reportPath, 'utf8'));
    figures.skipped += unrunnable.length;
    figures.skips.push(...unrunnable);
    await writeFile(join(options.reportDir, 'summary.json'), JSON.stringify(figures));
    for (const skip of figures.skips) log(`skipped: ${skip.name}: ${skip.message.split('\n')[0]}`);
    for (const failure of figures.failures) log(`FAILED (${failure.state}): ${failure.name}: ${failure.message.split('\n')[0]}`);
    log(`reports, critest's output and Skiff's log: ${options.reportDir}`);
    process.stdout.write(`${summaryLine(figures, 'critest')}\n`);
    return figures.failed === 0 ? 0 : 1;
  } finally {
    try {
      if (skiff !== undefined) await stopSkiff(skiff, options);
    } finally {
      await registry.stop();
    }
  }
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: critest.js --critest-bin DIR [--handler runsc] [--focus RE] [--skip RE] [--procs N] [--report-dir DIR]\n`);
  process.exit(2);
}

let options: CritestOptions;
try {
  options = parseCritestOptions(process.argv.slice(2));
} catch (err) {
  usage((err as Error).message);
}
main(options).then(
  (code) => process.exit(code),
  (err: Error) => {
    if (err instanceof UsageError) usage(err.message);
    process.stderr.write(`critest: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);

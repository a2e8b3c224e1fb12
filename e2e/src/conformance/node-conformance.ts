/**
 * Runs the Kubernetes node conformance suite (e2e_node.test) against a Skiff instance of its own,
 * on a node of its own beside whatever else runs on the machine. scripts/node-conformance.sh is
 * how a person runs it.
 *
 *   node node-conformance.js --kube-bin DIR [--label-filter EXPR] [--focus RE] [--skip RE]
 *                            [--report-dir DIR] [--handler runsc] [--shard K/N] [--procs N]
 *
 * Outside (with the network): builds the images the suite runs (conformance-images.ts), then gives
 * the node a cgroup of its own in every hierarchy, below this process's, and starts the inside part
 * in new mount, cgroup, network and PID namespaces, under catatonit as the node's PID 1, so that the
 * node's cgroup is the root the kubelet sees (its /system, /kubelet and /kubepods are the node's,
 * and the processes it moves into /system are the node's own), its ports (the kubelet's 10250, the
 * API server's) and CNI bridge are its own, its /var/lib/kubelet, /var/log/pods and /var/lib/cni
 * are directories of this run, and its init's namespaces can be read (the kubelet compares its own
 * with /proc/1's before it moves itself into /kubelet; the host's are closed to it). Everything the
 * node ran ends with its PID 1.
 *
 * Inside: the registry with the images, Skiff (registries.conf mirrors to it) with its daemons in
 * the cgroup /skiff (the kubelet's --runtime-cgroups), every image pulled through Skiff, then the
 * suite, which starts its own API server and etcd in-process and the kubelet beside it. The figures
 * come from the suite's JSON report; the last line printed is
 *   node-conformance: N passed, N failed, N skipped
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { callUnary } from '@skiff/proto';
import {
  CONFORMANCE_IMAGES,
  conformanceRegistriesConf,
  getConformanceImage,
  pushConformanceImages,
  type ConformanceSources,
} from '../lib/conformance-images.js';
import { startRegistry } from '../lib/registry.js';
import { removeAllPods } from '../lib/remove-pods.js';
import { mountsUnder } from '../lib/runtime-inventory.js';
import { startSkiff } from '../lib/skiff-instance.js';
import { removeDir } from '../lib/tmp.js';
import { cgroupMounts, createCgroup, moveProcess, ownCgroups, processesIn, removeCgroupTree } from './node-cgroups.js';
import { runSuiteProcess } from './suite-process.js';
import { selectedSpecContainers, selectedSpecNames, suiteFigures, summaryLine, type SuiteFigures } from './suite-report.js';
import { skipPattern, unrunnableReason, UNRUNNABLE_SPECS } from './unrunnable-specs.js';
import { exactNamesPattern, parseShard, shardOf, type Shard } from './shards.js';

const run = promisify(execFile);

export const DEFAULT_LABEL_FILTER = 'NodeConformance && !Flaky && !Slow';
/**
 * Most of a spec's time is spent waiting (for probes, restarts, back-offs), so specs run in
 * several processes at once even on two cores, as the suite's own CI runs them.
 */
const DEFAULT_PROCS = 4;
/** The node's own address, on an interface of its network namespace. */
const NODE_IP = '10.217.0.1';
/** The cgroup (inside the node) of Skiff's daemons, their conmons and the registry. */
const RUNTIME_CGROUP = 'skiff';
/** The RuntimeClass handler the suite's RuntimeClass and PodOverhead specs expect on a node (runc). */
const TEST_HANDLER = ['[[runtime.handlers]]', 'name = "test-handler"', 'runtime_path = "/usr/local/sbin/runc"', 'kind = "oci"'].join('\n');

/** The [runtime] keys of the node's Skiff: with --handler, every pod that names no handler runs under it. */
function runtimeConfig(handler: string | undefined): string {
  // A plain key comes before the table array, or TOML would make it the handler's.
  return handler === undefined ? TEST_HANDLER : `default_handler = "${handler}"\n${TEST_HANDLER}`;
}
/** Directories the kubelet shares with any other kubelet on the machine, made private to the node. */
const PRIVATE_DIRS = { kubelet: '/var/lib/kubelet', 'pod-logs': '/var/log/pods', cni: '/var/lib/cni' };

interface Options {
  kubeBin: string;
  labelFilter: string;
  focus?: string;
  skip?: string;
  reportDir: string;
  handler?: string;
  /** Run only this part of the selected specs (shards.ts). */
  shard?: Shard | undefined;
  /** Ginkgo processes running specs at once; the Serial ones run alone at the end. */
  procs: number;
  /** Go regular expressions of specs left out as unrunnable here (unrunnable-specs.ts). */
  unrunnable?: string[];
}

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: node-conformance.js --kube-bin DIR [--label-filter EXPR] [--focus RE] [--skip RE] [--report-dir DIR] [--handler runsc] [--shard K/N] [--procs N]\n`,
  );
  process.exit(2);
}

function parseOptions(args: string[]): Options {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (!['--kube-bin', '--label-filter', '--focus', '--skip', '--report-dir', '--handler', '--shard', '--procs'].includes(name)) usage(`unknown option ${name}`);
    if (value === undefined) usage(`${name} needs a value`);
    values.set(name, value);
  }
  const kubeBin = values.get('--kube-bin') ?? usage('--kube-bin is required');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const handler = values.get('--handler');
  if (handler !== undefined && handler !== 'runsc') usage(`--handler takes runsc, not ${handler}`);
  let shard: Shard | undefined;
  try {
    shard = values.has('--shard') ? parseShard(values.get('--shard')!) : undefined;
  } catch (err) {
    usage((err as Error).message);
  }
  const procs = Number(values.get('--procs') ?? DEFAULT_PROCS);
  if (!Number.isInteger(procs) || procs < 1 || procs > 16) usage(`--procs takes a whole number from 1 to 16, not ${values.get('--procs')}`);
  return {
    kubeBin: resolve(kubeBin),
    labelFilter: values.get('--label-filter') ?? DEFAULT_LABEL_FILTER,
    focus: values.get('--focus'),
    skip: values.get('--skip'),
    reportDir: resolve(values.get('--report-dir') ?? `/var/tmp/skiff-node-conformance/${stamp}`),
    handler,
    shard,
    procs,
  };
}

function sources(options: Options): ConformanceSources {
  return { agnhost: join(options.kubeBin, 'agnhost') };
}

function log(message: string): void {
  process.stdout.write(`node-conformance: ${message}\n`);
}

// ---------------------------------------------------------------- outside

/** The images the catalogue has that this build of the suite does not list: a version drifted. */
async function unlistedImages(options: Options): Promise<string[]> {
  const { stdout } = await run(join(options.kubeBin, 'e2e_node.test'), ['--list-images'], { maxBuffer: 4 * 1024 * 1024 });
  const listed = new Set(stdout.split('\n').map((line) => line.trim()));
  return CONFORMANCE_IMAGES.filter((spec) => spec.listed && !listed.has(spec.reference)).map((spec) => spec.reference);
}

const CATATONIT = '/usr/bin/catatonit';

/** The node's processes end with its PID 1; their cgroups can go once the kernel has reaped them. */
async function nodeProcessesGone(nodeCgroup: string, own: Map<string, string>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && (await processesIn(nodeCgroup, own)) > 0) await new Promise((r) => setTimeout(r, 200));
}

/**
 * The specs the filters select, by a dry run of the suite (the unrunnable ones among them are
 * counted as skipped): their names, and each one's container.
 */
async function selectedSpecs(options: Options): Promise<{ names: string[]; containers: Map<string, string> }> {
  const dir = join(options.reportDir, 'selection');
  await mkdir(dir, { recursive: true });
  const report = join(dir, 'report.json');
  const args = ['--ginkgo.dry-run', `--ginkgo.label-filter=${options.labelFilter}`, `--ginkgo.json-report=${report}`];
  if (options.focus !== undefined) args.push(`--ginkgo.focus=${options.focus}`);
  if (options.skip !== undefined) args.push(`--ginkgo.skip=${options.skip}`);
  await run(join(options.kubeBin, 'e2e_node.test'), args, { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  const json = await readFile(report, 'utf8');
  return { names: selectedSpecNames(json), containers: selectedSpecContainers(json) };
}

async function outside(options: Options): Promise<number> {
  for (const tool of ['e2e_node.test', 'ginkgo', 'kubelet', 'agnhost']) {
    if (!existsSync(join(options.kubeBin, tool))) usage(`${join(options.kubeBin, tool)} is missing: run scripts/kube-tools.sh`);
  }
  const unlisted = await unlistedImages(options);
  if (unlisted.length > 0) throw new Error(`the suite does not use these catalogue images (update conformance-images.ts): ${unlisted.join(', ')}`);
  log('building the images');
  for (const spec of CONFORMANCE_IMAGES) await getConformanceImage(spec.name, sources(options));

  await mkdir(options.reportDir, { recursive: true });
  const selection = await selectedSpecs(options);
  let selected = selection.names;
  if (options.shard) {
    selected = shardOf(selected, options.shard, (name) => selection.containers.get(name) ?? name);
    if (selected.length === 0) usage(`shard ${options.shard.index}/${options.shard.count} holds no spec`);
    log(`shard ${options.shard.index} of ${options.shard.count}: ${selected.length} specs`);
    // The dry run applied the focus given; the shard's own names replace it.
    options.focus = exactNamesPattern(selected);
  }
  const unrunnable = selected.flatMap((name) => {
    const reason = unrunnableReason(name);
    return reason === undefined ? [] : [{ name, state: 'skipped', message: `cannot run on this machine: ${reason}` }];
  });
  options.unrunnable = UNRUNNABLE_SPECS.map(skipPattern);
  const nodeCgroup = `skiff-node-conformance-${process.pid}`;
  const own = ownCgroups();
  await createCgroup(nodeCgroup, own);
  await moveProcess(process.pid, nodeCgroup, own);
  let code: number;
  try {
    const namespaces = ['--mount', '--cgroup', '--net', '--pid', '--fork', '--mount-proc', '--kill-child=SIGTERM', '--propagation', 'private'];
    const inner = [process.execPath, fileURLToPath(import.meta.url), '--inside', JSON.stringify(options)];
    const child = spawn('unshare', [...namespaces, '--', CATATONIT, '--', ...inner], { stdio: 'inherit' });
    // unshare --fork ignores SIGINT and SIGTERM while it waits: the node's PID 1 (catatonit, its
    // only child) gets them, and hands them to the runner inside.
    const forward = (signal: NodeJS.Signals): void => {
      try {
        const init = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0];
        if (init) process.kill(Number(init), signal);
      } catch {
        // the node has ended already
      }
    };
    process.on('SIGINT', forward).on('SIGTERM', forward);
    code = await new Promise<number>((resolve) => child.once('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1))));
  } finally {
    await moveProcess(process.pid, '', own);
    await nodeProcessesGone(nodeCgroup, own);
    const left = await removeCgroupTree(nodeCgroup, own);
    if (left.length > 0) log(`cgroups left behind (processes still in them): ${left.join(' ')}`);
  }
  const summaryPath = join(options.reportDir, 'summary.json');
  if (!existsSync(summaryPath)) {
    log(`the suite did not report (exit code ${code}); see ${options.reportDir}`);
    return code === 0 ? 1 : code;
  }
  const figures = JSON.parse(await readFile(summaryPath, 'utf8')) as SuiteFigures;
  figures.skipped += unrunnable.length;
  figures.skips.push(...unrunnable);
  for (const skip of figures.skips) log(`skipped: ${skip.name}: ${skip.message.split('\n')[0]}`);
  for (const failure of figures.failures) log(`FAILED (${failure.state}): ${failure.name}`);
  log(`report, logs and the kubelet's log: ${options.reportDir}`);
  process.stdout.write(`${summaryLine(figures)}\n`);
  return figures.failed === 0 ? 0 : 1;
}

// ---------------------------------------------------------------- inside

async function sh(command: string, args: string[]): Promise<void> {
  await run(command, args);
}

/**
 * Mounts every cgroup hierarchy again, so that it shows the node's cgroup as its root (the mounts
 * inherited from the host show the host's root). The kernel refuses a hierarchy mounted twice on
 * one mount point, hence the unmount first.
 */
async function mountNodeCgroups(): Promise<void> {
  for (const mount of cgroupMounts()) {
    await sh('umount', [mount.mountPoint]);
    if (mount.fsType === 'cgroup2') await sh('mount', ['-t', 'cgroup2', 'skiff-node', mount.mountPoint]);
    else await sh('mount', ['-t', 'cgroup', '-o', mount.options, 'skiff-node', mount.mountPoint]);
  }
}

async function setUpNetwork(): Promise<void> {
  await sh('ip', ['link', 'set', 'lo', 'up']);
  // A veth pair with both ends here: the kernel has no dummy interfaces, and a link needs a
  // carrier for its address to be used.
  await sh('ip', ['link', 'add', 'skiff-node', 'type', 'veth', 'peer', 'name', 'skiff-node-peer']);
  await sh('ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', 'skiff-node']);
  await sh('ip', ['link', 'set', 'skiff-node-peer', 'up']);
  await sh('ip', ['link', 'set', 'skiff-node', 'up']);
  // The API server takes its advertised address from the default route's interface. Nothing
  // answers there: addresses beyond the node are unreachable, as the machine has no network.
  await sh('ip', ['route', 'add', 'default', 'dev', 'skiff-node']);
}

async function privateDirs(stateDir: string): Promise<void> {
  for (const [name, target] of Object.entries(PRIVATE_DIRS)) {
    const source = join(stateDir, name);
    await mkdir(source, { recursive: true });
    await mkdir(target, { recursive: true });
    await sh('mount', ['--bind', source, target]);
  }
  // A journald of the node's own, which runtime-svc starts when it finds none: logs-svc trusts a
  // barrier entry by the pid journald records for its sender, and the host's journald records
  // pids of the host's PID namespace, not the node's.
  for (const dir of ['/run/systemd', '/run/log/journal', '/var/log/journal']) {
    await mkdir(dir, { recursive: true });
    await sh('mount', ['-t', 'tmpfs', '-o', 'mode=0755', 'skiff-node', dir]);
  }
  // Without systemd as PID 1 the suite must start the kubelet itself, which it does only when it
  // finds no systemd-run; a character device is not executable, so the lookup fails.
  if (existsSync('/usr/bin/systemd-run')) await sh('mount', ['--bind', '/dev/null', '/usr/bin/systemd-run']);
}

/**
 * The resolver configuration pods with dnsPolicy Default get. The host's names a resolver beyond
 * the node, which nothing reaches from here: a lookup there waits out its timeouts, seconds each,
 * and specs whose commands look names up (the summary spec's `ping google.com` between bursts of
 * CPU) spend most of their time waiting. A resolver on the pod's own loopback refuses at once, as
 * a node's resolver answers at once, and no lookup goes anywhere.
 */
const POD_RESOLV_CONF = 'nameserver 127.0.0.1\n';

function kubeletConfig(runtimeSocket: string, imageSocket: string, resolvConf: string): string {
  return [
    'apiVersion: kubelet.config.k8s.io/v1beta1',
    'kind: KubeletConfiguration',
    'cgroupDriver: cgroupfs',
    'cgroupRoot: /',
    // cgroup v1 hosts: the kubelet refuses them from 1.35 on unless told.
    'failCgroupV1: false',
    'failSwapOn: false',
    'podCIDR: "10.100.0.0/24"',
    'volumeStatsAggPeriod: 10s',
    'fileCheckFrequency: 10s',
    'evictionPressureTransitionPeriod: 30s',
    'evictionHard:',
    '  memory.available: 250Mi',
    '  nodefs.available: 10%',
    '  nodefs.inodesFree: 5%',
    'evictionMinimumReclaim:',
    '  nodefs.available: 5%',
    '  nodefs.inodesFree: 5%',
    'serializeImagePulls: false',
    `containerRuntimeEndpoint: unix://${runtimeSocket}`,
    `imageServiceEndpoint: unix://${imageSocket}`,
    `resolvConf: ${resolvConf}`,
    '',
  ].join('\n');
}

/** The ginkgo command's flags: which specs, how many processes, the report. */
function ginkgoArgs(options: Options): string[] {
  const args = [
    `--procs=${options.procs}`,
    `--label-filter=${options.labelFilter}`,
    '-v',
    '--no-color',
    '--timeout=24h',
    // ginkgo puts the report of a compiled suite beside the binary unless given a directory.
    `--output-dir=${options.reportDir}`,
    '--json-report=report.json',
    '--output-interceptor-mode=none',
  ];
  if (options.focus !== undefined) args.push(`--focus=${options.focus}`);
  if (options.skip !== undefined) args.push(`--skip=${options.skip}`);
  for (const pattern of options.unrunnable ?? []) args.push(`--skip=${pattern}`);
  return args;
}

/** The suite's own flags: where the runtime and the kubelet's configuration are. */
function suiteArgs(options: Options, runtimeSocket: string, imageSocket: string, runDir: string, configPath: string): string[] {
  return [
    `--report-dir=${options.reportDir}`,
    `--container-runtime-endpoint=unix://${runtimeSocket}`,
    `--image-service-endpoint=unix://${imageSocket}`,
    '--container-runtime-process-name=runtime-svc',
    `--container-runtime-pid-file=${join(runDir, 'runtime-svc.pid')}`,
    `--kubelet-config-file=${configPath}`,
    `--node-name=${hostname().toLowerCase()}`,
    // The suite's own pre-pull list names images no NodeConformance spec runs (cadvisor, node-perf,
    // the device plugins, etcd, busybox by an upstream digest); every catalogue image is pulled
    // through Skiff before the suite starts instead.
    '--prepull-images=false',
    `--kubelet-flags=--runtime-cgroups=/${RUNTIME_CGROUP} --node-ip=${NODE_IP}`,
    // cAdvisor knows containerd's and CRI-O's containers, not Skiff's: the kubelet's summary and
    // /metrics/cadvisor take pod and container figures from Skiff's CRI stats and metrics instead.
    '--feature-gates=PodAndContainerStatsFromCRI=true',
  ];
}

async function runSuite(args: string[], options: Options, workDir: string): Promise<number> {
  // ginkgo runs a compiled suite in the directory the binary is in, and the suite looks for the
  // kubelet beside itself.
  for (const tool of ['e2e_node.test', 'kubelet']) {
    await rm(join(workDir, tool), { force: true });
    await symlink(join(options.kubeBin, tool), join(workDir, tool));
  }
  const suite = join(workDir, 'e2e_node.test');
  return runSuiteProcess(join(options.kubeBin, 'ginkgo'), [...ginkgoArgs(options), suite, '--', ...args], { cwd: workDir, logPath: join(options.reportDir, 'suite.log') });
}

async function inside(options: Options): Promise<number> {
  await mountNodeCgroups();
  await setUpNetwork();
  const stateDir = join(options.reportDir, 'node');
  await privateDirs(stateDir);

  // The registry and Skiff start in the runtime cgroup, so their processes are none of the
  // kubelet's to move; the suite starts from the node's root cgroup.
  await createCgroup(RUNTIME_CGROUP);
  await moveProcess(process.pid, RUNTIME_CGROUP);
  const registry = await startRegistry();
  let skiff: Awaited<ReturnType<typeof startSkiff>> | undefined;
  try {
    log(`pushing the images to the registry at ${registry.host}`);
    await pushConformanceImages(registry, sources(options));
    skiff = await startSkiff({ registriesConf: conformanceRegistriesConf(registry.host), logLevel: 'info', config: runtimeConfig(options.handler) });
    await moveProcess(process.pid, '');
    const images = skiff.imageClient();
    for (const spec of CONFORMANCE_IMAGES) {
      await callUnary(images, 'PullImage', { image: { image: spec.reference } }, { timeoutMs: 300_000 });
    }
    log(`pulled ${CONFORMANCE_IMAGES.length} images through Skiff`);

    const workDir = join(options.reportDir, 'work');
    await mkdir(workDir, { recursive: true });
    const configPath = join(workDir, 'kubelet-base.yaml');
    const resolvConf = join(workDir, 'resolv.conf');
    await writeFile(resolvConf, POD_RESOLV_CONF);
    await writeFile(configPath, kubeletConfig(skiff.runtimeSocket, skiff.imageSocket, resolvConf));
    const args = suiteArgs(options, skiff.runtimeSocket, skiff.imageSocket, skiff.runDir, configPath);
    log(`ginkgo ${ginkgoArgs(options).join(' ')} e2e_node.test -- ${args.join(' ')}`);
    const code = await runSuite(args, options, workDir);
    const reportPath = join(options.reportDir, 'report.json');
    if (existsSync(reportPath)) {
      const figures = suiteFigures(await readFile(reportPath, 'utf8'));
      await writeFile(join(options.reportDir, 'summary.json'), JSON.stringify(figures));
    }
    return code;
  } finally {
    if (skiff !== undefined) {
      await removeAllPods(skiff.runtimeSocket).catch((err: Error) => log(`removing the pods: ${err.message}`));
      await writeFile(join(options.reportDir, 'skiff.log'), skiff.output()).catch(() => undefined);
      await skiff.stop({ keepDir: true });
      // Network namespaces and /dev/shm mounts of pods the kubelet left; the node's mount
      // namespace ends with this process, but the directory must be empty of mounts to go.
      for (const mount of (await mountsUnder(skiff.dir)).reverse()) await sh('umount', ['--lazy', mount]).catch(() => undefined);
      await removeDir(skiff.dir);
    }
    await registry.stop();
  }
}

const args = process.argv.slice(2);
const main = args[0] === '--inside' ? () => inside(JSON.parse(args[1]!) as Options) : () => outside(parseOptions(args));
main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`node-conformance: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);


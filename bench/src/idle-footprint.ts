/**
 * What Skiff costs in memory when it does nothing, and what a pod adds: `skiff up` started as the
 * end-to-end tests start it, then
 *   - RSS and PSS (from /proc/<pid>/smaps_rollup) of every process Skiff runs idle — the supervisor,
 *     the four daemons and their helpers (logs-svc's `journalctl -f`) — beside, in the same run, as
 *     many idle `node` processes as there are node processes in Skiff (the floor no Node daemon
 *     goes below; the supervisor, a bash script, is not one);
 *   - the same with 10 running pods (busybox `sleep 3600`): what each pod adds to the daemons and
 *     its conmon, beside one idle conmon;
 *   - the p50 / p99 of Version, ListContainers, ImageStatus and ListPodSandboxStats with no pods and with the pods, and
 *     the pods' start p50, so that a flag that saves memory by costing time shows it.
 *
 *   node bench/dist/idle-footprint.js [--pods N] [--calls M]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { listConmonProcesses, startRuntimeHarness, type RuntimeHarness } from '@skiff/e2e/lib';
import { IDLE_NODE_SCRIPT, pssBytes } from './floors.js';
import { mib, ms, percentile, printTable, rssBytes, timed } from './stats.js';

const DAEMONS = ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc'] as const;
/** Long enough for start-up work (JIT, first GCs) to settle: RSS is flat after it. */
const SETTLE_MS = 3000;

interface Proc {
  pid: number;
  name: string;
}

interface Usage {
  rss: number;
  pss: number;
}

async function usageOf(pid: number): Promise<Usage> {
  return { rss: await rssBytes(pid).catch(() => 0), pss: await pssBytes(pid).catch(() => 0) };
}

async function sumUsage(procs: readonly Proc[]): Promise<Usage & { each: Map<string, Usage> }> {
  const each = new Map<string, Usage>();
  let rss = 0;
  let pss = 0;
  for (const p of procs) {
    const u = await usageOf(p.pid);
    rss += u.rss;
    pss += u.pss;
    const prev = each.get(p.name);
    each.set(p.name, prev ? { rss: prev.rss + u.rss, pss: prev.pss + u.pss } : u);
  }
  return { rss, pss, each };
}

/**
 * What of a process's memory is pages of the journal's files it maps (journalctl's window on the
 * journal): page cache of files journald keeps anyway, counted in the reader's RSS while mapped.
 */
async function journalFilePages(pid: number): Promise<Usage> {
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8').catch(() => '');
  let inJournal = false;
  let rss = 0;
  let pss = 0;
  for (const line of text.split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      inJournal = /^\/(run|var)\/log\/journal\//.test(mapping[1]!);
      continue;
    }
    if (!inJournal) continue;
    const field = /^(Rss|Pss):\s+(\d+) kB$/.exec(line);
    if (field?.[1] === 'Rss') rss += Number(field[2]) * 1024;
    if (field?.[1] === 'Pss') pss += Number(field[2]) * 1024;
  }
  return { rss, pss };
}

async function statOf(pid: number): Promise<{ ppid: number; comm: string } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    return { ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), comm };
  } catch {
    return undefined;
  }
}

/**
 * Every process Skiff runs outside its pods: the supervisor, each daemon and the daemons'
 * descendants (conmons are counted per pod; what runs under a conmon or runc is the pods').
 */
async function skiffProcesses(h: RuntimeHarness): Promise<{ supervisor: Proc; daemons: Proc[]; helpers: Proc[] }> {
  const daemons: Proc[] = [];
  for (const name of DAEMONS) {
    const pid = await h.skiff.servicePid(name);
    if (pid === undefined) throw new Error(`no pid for ${name}`);
    daemons.push({ pid, name });
  }
  const supervisorPid = (await statOf(daemons[0]!.pid))!.ppid;
  const children = new Map<number, { pid: number; comm: string }[]>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = await statOf(Number(entry));
    if (s === undefined) continue;
    const list = children.get(s.ppid) ?? [];
    list.push({ pid: Number(entry), comm: s.comm });
    children.set(s.ppid, list);
  }
  const helpers: Proc[] = [];
  const walk = (pid: number, owner: string): void => {
    for (const c of children.get(pid) ?? []) {
      if (c.comm === 'conmon' || c.comm === 'runc' || daemons.some((d) => d.pid === c.pid)) continue;
      helpers.push({ pid: c.pid, name: `${owner}: ${c.comm}` });
      walk(c.pid, owner);
    }
  };
  for (const d of daemons) walk(d.pid, d.name);
  const supervisorComm = (await statOf(supervisorPid))?.comm ?? '?';
  return { supervisor: { pid: supervisorPid, name: `supervisor (skiff up, ${supervisorComm})` }, daemons, helpers };
}

async function startIdleNodes(count: number): Promise<ChildProcess[]> {
  const nodes = Array.from({ length: count }, () => spawn(process.execPath, ['-e', IDLE_NODE_SCRIPT], { stdio: 'ignore' }));
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  return nodes;
}

interface Snapshot {
  rows: [string, string][];
  total: Usage;
  /** The supervisor and the daemons alone: journalctl's RSS is mostly journal files it maps, which come and go with the journal. */
  nodes: Usage;
  conmons: Usage & { count: number; median: Usage };
}

async function snapshot(h: RuntimeHarness, withFloor: boolean): Promise<Snapshot & { floor?: Usage & { count: number } }> {
  const { supervisor, daemons, helpers } = await skiffProcesses(h);
  // As many idle node processes as Skiff runs: the daemons, and the supervisor if it is one.
  const nodeCount = daemons.length + ((await statOf(supervisor.pid))?.comm === 'node' ? 1 : 0);
  const nodes = withFloor ? await startIdleNodes(nodeCount) : [];
  try {
    const all = [supervisor, ...daemons, ...helpers];
    const usage = await sumUsage(all);
    const nodeUsage = [supervisor, ...daemons].reduce((t, p) => ({ rss: t.rss + usage.each.get(p.name)!.rss, pss: t.pss + usage.each.get(p.name)!.pss }), { rss: 0, pss: 0 });
    const rows: [string, string][] = [...usage.each].map(([name, u]) => [name, `${mib(u.rss)} RSS, ${mib(u.pss)} PSS`]);
    for (const reader of helpers.filter((p) => p.name.endsWith(': journalctl'))) {
      const pages = await journalFilePages(reader.pid);
      rows.push([`  of it, the journal's files it maps`, `${mib(pages.rss)} RSS, ${mib(pages.pss)} PSS`]);
    }
    const conmonPids = (await listConmonProcesses(h.skiff.runDir)).map((c) => c.pid);
    const conmonUsage = await Promise.all(conmonPids.map(usageOf));
    const conmons = {
      count: conmonPids.length,
      rss: conmonUsage.reduce((t, u) => t + u.rss, 0),
      pss: conmonUsage.reduce((t, u) => t + u.pss, 0),
      median: { rss: percentile(conmonUsage.map((u) => u.rss), 50) || 0, pss: percentile(conmonUsage.map((u) => u.pss), 50) || 0 },
    };
    if (!withFloor) return { rows, total: usage, nodes: nodeUsage, conmons };
    const floorUsage = await sumUsage(nodes.map((n) => ({ pid: n.pid!, name: 'node' })));
    return { rows, total: usage, nodes: nodeUsage, conmons, floor: { ...floorUsage, count: nodes.length } };
  } finally {
    for (const n of nodes) n.kill('SIGKILL');
  }
}

async function latencies(h: RuntimeHarness, calls: number): Promise<[string, string][]> {
  const image = h.imageRef('busybox');
  const ops: [string, () => Promise<unknown>][] = [
    ['Version', () => callUnary(h.runtime, 'Version', {})],
    ['ListContainers', () => callUnary(h.runtime, 'ListContainers', {})],
    ['ImageStatus', () => callUnary(h.images, 'ImageStatus', { image: { image } })],
    ['ListPodSandboxStats', () => callUnary(h.runtime, 'ListPodSandboxStats', {})],
  ];
  const rows: [string, string][] = [];
  for (const [name, op] of ops) {
    for (let i = 0; i < 5; i++) await op();
    const samples: number[] = [];
    for (let i = 0; i < calls; i++) samples.push(await timed(op));
    rows.push([`${name} p50 / p99`, `${ms(percentile(samples, 50))} / ${ms(percentile(samples, 99))}`]);
  }
  return rows;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pods: { type: 'string', default: '10' }, calls: { type: 'string', default: '200' } } });
  const podCount = Number(values.pods);
  const calls = Number(values.calls);
  const h = await startRuntimeHarness({ images: ['busybox'] });
  try {
    // The harness's pull has run; let start-up settle, then the idle figures (no call made since).
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const idle = await snapshot(h, true);
    const floor = idle.floor!;
    printTable('Idle, no pods (target: <= 200 MiB RSS, <= 90 MiB PSS in all)', [
      ...idle.rows,
      ['supervisor and daemons', `${mib(idle.nodes.rss)} RSS, ${mib(idle.nodes.pss)} PSS`],
      ['total', `${mib(idle.total.rss)} RSS, ${mib(idle.total.pss)} PSS`],
      [`floor: ${floor.count} idle node`, `${mib(floor.rss)} RSS, ${mib(floor.pss)} PSS`],
      ['above the floor', `${mib(idle.total.rss - floor.rss)} RSS, ${mib(idle.total.pss - floor.pss)} PSS`],
    ]);

    const latencyIdle = await latencies(h, calls);
    printTable(`Calls with no pods, ${calls} each, one at a time`, latencyIdle);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const afterCalls = await snapshot(h, false);
    printTable('Still no pods, after the calls', [
      ['total', `${mib(afterCalls.total.rss)} RSS, ${mib(afterCalls.total.pss)} PSS`],
      ['supervisor and daemons', `${mib(afterCalls.nodes.rss)} RSS, ${mib(afterCalls.nodes.pss)} PSS`],
    ]);

    const podStarts: number[] = [];
    for (let i = 0; i < podCount; i++) {
      podStarts.push(await timed(async () => h.runContainer(await h.runPod(), 'main')));
    }
    const latencyPods = await latencies(h, calls);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const busy = await snapshot(h, false);
    // Against the figure after the same calls with no pods: what the calls grew is not the pods'.
    // journalctl is left out of it: its RSS is journal files it maps, which other writers grow too.
    const perPod = (a: number, b: number): string => mib((a - b) / podCount);
    printTable(`${podCount} running pods`, [
      ...busy.rows,
      ['total without conmons', `${mib(busy.total.rss)} RSS, ${mib(busy.total.pss)} PSS`],
      [`${busy.conmons.count} conmons`, `${mib(busy.conmons.rss)} RSS, ${mib(busy.conmons.pss)} PSS (median ${mib(busy.conmons.median.rss)} RSS, ${mib(busy.conmons.median.pss)} PSS)`],
      ['supervisor and daemons', `${mib(busy.nodes.rss)} RSS, ${mib(busy.nodes.pss)} PSS`],
      [
        'per pod: supervisor, daemons and its conmon',
        `${perPod(busy.nodes.rss + busy.conmons.rss, afterCalls.nodes.rss)} RSS, ${perPod(busy.nodes.pss + busy.conmons.pss, afterCalls.nodes.pss)} PSS`,
      ],
      ['per pod: supervisor and daemons only', `${perPod(busy.nodes.rss, afterCalls.nodes.rss)} RSS, ${perPod(busy.nodes.pss, afterCalls.nodes.pss)} PSS`],
    ]);
    printTable(`Calls with ${podCount} pods, ${calls} each, one at a time`, [
      [`pod start (RunPodSandbox + CreateContainer + StartContainer), ${podCount} one at a time, p50`, ms(percentile(podStarts, 50))],
      ...latencyPods,
    ]);
  } finally {
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

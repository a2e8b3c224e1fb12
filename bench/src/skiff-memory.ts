/**
 * The memory of a Skiff instance with its pods: RSS and PSS of the four daemons (image-svc,
 * runtime-svc, stream-svc, logs-svc) and of every conmon, and the floor for as many processes:
 * four idle node processes plus one idle conmon (the median one) per conmon.
 */
import { listConmonProcesses, type RuntimeHarness } from '@skiff/e2e/lib';
import { pssBytes, type NodeFloor } from './floors.js';
import { median, mib, rssBytes } from './stats.js';

export interface MemoryFigures {
  daemons: number;
  conmons: number;
  conmonCount: number;
  /** The median conmon's RSS and PSS (0 without conmons). */
  oneConmon: { rss: number; pss: number };
  pss: number;
  /** Each daemon's RSS and PSS, by service name. */
  perDaemon: Record<string, { rss: number; pss: number }>;
}

export async function skiffMemory(h: RuntimeHarness): Promise<MemoryFigures> {
  const daemons: number[] = [];
  const names = ['image-svc', 'runtime-svc', 'stream-svc', 'logs-svc'];
  for (const name of names) {
    const pid = await h.skiff.servicePid(name);
    if (pid === undefined) throw new Error(`no pid for ${name}`);
    daemons.push(pid);
  }
  const conmons = (await listConmonProcesses(h.skiff.runDir)).map((c) => c.pid);
  const each = (pids: number[], read: (pid: number) => Promise<number>): Promise<number[]> => Promise.all(pids.map((pid) => read(pid).catch(() => 0)));
  const total = (values: number[]): number => values.reduce((a, b) => a + b, 0);
  const conmonRss = await each(conmons, rssBytes);
  const conmonPss = await each(conmons, pssBytes);
  const daemonRss = await each(daemons, rssBytes);
  const daemonPss = await each(daemons, pssBytes);
  return {
    daemons: total(daemonRss),
    conmons: total(conmonRss),
    conmonCount: conmons.length,
    oneConmon: conmons.length === 0 ? { rss: 0, pss: 0 } : { rss: median(conmonRss), pss: median(conmonPss) },
    pss: total(daemonPss) + total(conmonPss),
    perDaemon: Object.fromEntries(names.map((name, i) => [name, { rss: daemonRss[i]!, pss: daemonPss[i]! }])),
  };
}

/** The figures, then the floor for as many conmons: four idle node processes plus that many times the median conmon. */
export function memoryRows(label: string, m: MemoryFigures, node: NodeFloor): [string, string][] {
  const floorRss = 4 * node.rss + m.conmonCount * m.oneConmon.rss;
  const floorPss = 4 * node.pss + m.conmonCount * m.oneConmon.pss;
  return [
    [label, `${mib(m.daemons + m.conmons)} RSS (daemons ${mib(m.daemons)}, ${m.conmonCount} conmons ${mib(m.conmons)}); PSS ${mib(m.pss)}`],
    [`  floor: 4 idle node + ${m.conmonCount} idle conmons`, `${mib(floorRss)} RSS (${mib(4 * node.rss)} + ${mib(m.conmonCount * m.oneConmon.rss)}); PSS ${mib(floorPss)}`],
    ['  above the floor', `${mib(m.daemons + m.conmons - floorRss)} RSS; PSS ${mib(m.pss - floorPss)}`],
  ];
}


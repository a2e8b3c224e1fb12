/**
 * A container's CRI log files as the kubelet keeps them (<pod log dir>/<container>/<restart>.log,
 * rotated ones as <restart>.log.<time>, maybe gzipped) and the numbered lines in them.
 *
 *   podLogDir(node, namespace, name, uid): string
 *   readInstances(dir): Promise<InstanceLog[]>   every container instance (by restart number), its
 *                        lines oldest file first; read again when a rotation moved a file meanwhile
 *   tallyLines(pod, lines): LineTally            lines numbered from 0: lost, duplicated, out of order
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { KubeNode } from '../lib/kube-node.js';

export interface InstanceLog {
  instance: number;
  files: string[];
  lines: string[];
  /** Records that are not `<time> <stream> <P|F> <content>`. */
  malformed: number;
}

export interface LineTally {
  /** The lines the container printed, as far as the file tells: its end marker's count, else one past the highest number seen. */
  printed: number;
  seen: Set<number>;
  lost: number;
  /** Extra copies of a line, and lines written after a higher-numbered one. */
  duplicated: number;
  /** Lines that are neither `<pod> <n>` nor `<pod> end <n>`. */
  foreign: number;
  firstForeign: string | undefined;
  end: number | undefined;
  firstGap: number | undefined;
}

export function podLogDir(node: KubeNode, namespace: string, name: string, uid: string): string {
  return join(node.podLogsDir, `${namespace}_${name}_${uid}`);
}

const RECORD = /^\S+ (stdout|stderr) ([PF]) (.*)$/;
const FILE = /^(\d+)\.log(\..+)?$/;

function criLines(text: string): { lines: string[]; malformed: number } {
  const lines: string[] = [];
  let pending = '';
  let malformed = 0;
  for (const record of text.split('\n')) {
    if (!record) continue;
    const m = RECORD.exec(record);
    if (!m) {
      malformed++;
      continue;
    }
    pending += m[3];
    if (m[2] === 'F') {
      lines.push(pending);
      pending = '';
    }
  }
  if (pending) lines.push(pending);
  return { lines, malformed };
}

async function listLogFiles(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).filter((n) => FILE.test(n)).sort();
}

export async function readInstances(dir: string): Promise<InstanceLog[]> {
  for (let attempt = 0; ; attempt++) {
    const names = await listLogFiles(dir);
    const byInstance = new Map<number, string[]>();
    for (const name of names) {
      const instance = Number(FILE.exec(name)![1]);
      byInstance.set(instance, [...(byInstance.get(instance) ?? []), name]);
    }
    const out: InstanceLog[] = [];
    let moved = false;
    for (const [instance, files] of [...byInstance.entries()].sort((a, b) => a[0] - b[0])) {
      // Rotated files carry their time in the name, so they sort oldest first; the live file is last.
      const ordered = [...files.filter((f) => f !== `${instance}.log`).sort(), ...files.filter((f) => f === `${instance}.log`)];
      const log: InstanceLog = { instance, files: ordered, lines: [], malformed: 0 };
      for (const file of ordered) {
        const raw = await readFile(join(dir, file)).catch(() => undefined);
        if (raw === undefined) {
          moved = true;
          break;
        }
        const parsed = criLines((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'));
        log.lines.push(...parsed.lines);
        log.malformed += parsed.malformed;
      }
      out.push(log);
    }
    if (!moved && (await listLogFiles(dir)).join() === names.join()) return out;
    if (attempt >= 10) throw new Error(`the log files in ${dir} kept changing while read`);
  }
}

export function tallyLines(pod: string, lines: readonly string[]): LineTally {
  const numbered = new RegExp(`^${pod} (\\d+)$`);
  const ended = new RegExp(`^${pod} end (\\d+)$`);
  const copies = new Map<number, number>();
  let highest = -1;
  let duplicated = 0;
  let foreign = 0;
  let firstForeign: string | undefined;
  let end: number | undefined;
  for (const line of lines) {
    const e = ended.exec(line);
    if (e) {
      if (end !== undefined) duplicated++;
      end = Number(e[1]);
      continue;
    }
    const m = numbered.exec(line);
    if (!m) {
      foreign++;
      firstForeign ??= line;
      continue;
    }
    const n = Number(m[1]);
    const before = copies.get(n) ?? 0;
    copies.set(n, before + 1);
    if (before > 0 || n < highest) duplicated++;
    highest = Math.max(highest, n);
  }
  const printed = end ?? highest + 1;
  let lost = 0;
  let firstGap: number | undefined;
  for (let n = 0; n < printed; n++) {
    if (!copies.has(n)) {
      lost++;
      firstGap ??= n;
    }
  }
  return { printed, seen: new Set(copies.keys()), lost, duplicated, foreign, firstForeign, end, firstGap };
}

/**
 * logs-svc benchmark, through `skiff up` with busybox pulled from a local registry:
 *   - sustained lines/s from one container and from ten at once into the CRI log files, beside the
 *     floor measured in the same run: journald's own ingest of the same output, read back with
 *     `journalctl -f` (the stream logs-svc itself follows);
 *   - write→file latency p50/p99 of a container printing a line every 20 ms, idle and while the
 *     ten containers print at full speed (from journald's receive time, the record's timestamp,
 *     to the record being in the file);
 *   - a new container's first line, F containers (default 10) started one at a time: from
 *     journald's receive time to the record being in the file, beside the floor, the same entry
 *     reaching another `journalctl -f`; then the same beside ten containers writing 100 lines/s
 *     each, and logs-svc's CPU in both windows;
 *   - logs-svc RSS, idle and its peak under that load.
 *
 *   node bench/dist/logs.js [--lines N] [--first F]   N lines per container alone (default 200000), N/4 each of ten
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { open, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { callUnary } from '@skiff/proto';
import { startRuntimeHarness, type Pod, type RuntimeHarness } from '@skiff/e2e/lib';
import { cpuSeconds, mib, ms, percentile, printTable, rssBytes } from './stats.js';

const TIMESTAMP_LENGTH = '2026-01-01T00:00:00.000000000Z'.length;

/** Bytes of the CRI file holding `seq 1 n` on stdout: each record is "<time> stdout F <n>\n". */
function expectedSize(n: number): number {
  let size = 0;
  for (let i = 1; i <= n; i++) size += TIMESTAMP_LENGTH + ' stdout F '.length + String(i).length + 1;
  return size;
}

/** Counts journal entries of the given containers as `journalctl -f` delivers them; resolves at `total`. */
function followJournal(ids: string[], total: number): { done: Promise<number>; stop(): void } {
  const child = spawn('journalctl', ['--follow', '--no-tail', '--quiet', '--output', 'json', '--output-fields=CONTAINER_ID_FULL', ...ids.map((id) => `CONTAINER_ID_FULL=${id}`)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let seen = 0;
  const done = new Promise<number>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      for (const b of chunk) if (b === 0x0a) seen++;
      if (seen >= total) resolve(Date.now());
    });
  });
  return { done, stop: () => child.kill('SIGTERM') };
}

async function waitForSize(path: string, size: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const current = (await stat(path).catch(() => undefined))?.size ?? 0;
    if (current >= size) return Date.now();
    if (Date.now() > deadline) throw new Error(`${path} has ${current} of ${size} bytes after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Samples a process's RSS every 100 ms until stopped; answers the peak. */
function sampleRss(pid: number): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, await rssBytes(pid).catch(() => 0));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/** Latency of each record of a paced writer: now minus the record's timestamp, read as the file grows. */
function watchLatency(path: string): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    const handle = await open(path, 'r');
    let offset = 0;
    let carry = '';
    try {
      while (running) {
        const buf = Buffer.alloc(65536);
        const { bytesRead } = await handle.read(buf, 0, buf.length, offset);
        if (bytesRead > 0) {
          const now = Date.now();
          offset += bytesRead;
          const lines = (carry + buf.subarray(0, bytesRead).toString('latin1')).split('\n');
          carry = lines.pop() ?? '';
          for (const line of lines) {
            const stamp = line.slice(0, TIMESTAMP_LENGTH);
            const millis = Date.parse(stamp.slice(0, 23) + 'Z') + Number(stamp.slice(23, 26)) / 1000;
            if (!Number.isNaN(millis)) samples.push(now - millis);
          }
        } else {
          await new Promise((r) => setTimeout(r, 2));
        }
      }
    } finally {
      await handle.close();
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

interface JournalJsonEntry {
  __REALTIME_TIMESTAMP?: string;
  CONTAINER_ID_FULL?: string;
  MESSAGE?: string;
}

/**
 * `journalctl --follow --lines=0 --output json` with the given fields and matches; each entry is
 * handed over with the time it arrived and its latency (journald's receive time to arrival, in ms).
 */
function followJournalJson(fields: string, matches: string[], onEntry: (entry: JournalJsonEntry, latencyMs: number | undefined) => void): ChildProcess {
  const child = spawn('journalctl', ['--follow', '--lines=0', '--quiet', '--output', 'json', `--output-fields=${fields}`, ...matches], { stdio: ['ignore', 'pipe', 'ignore'] });
  let carry = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const now = Date.now();
    const lines = (carry + chunk.toString('utf8')).split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      const entry = JSON.parse(line) as JournalJsonEntry;
      onEntry(entry, entry.__REALTIME_TIMESTAMP ? now - Number(entry.__REALTIME_TIMESTAMP) / 1000 : undefined);
    }
  });
  return child;
}

/** The floor's latency for the same writer: journald's receive time to the entry reaching `journalctl -f`. */
function watchJournalLatency(id: string): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  const child = followJournalJson('CONTAINER_ID_FULL', [`CONTAINER_ID_FULL=${id}`], (_, latency) => {
    if (latency !== undefined) samples.push(latency);
  });
  return {
    async stop() {
      child.kill('SIGTERM');
      return samples;
    },
  };
}

/**
 * Every native-protocol entry's latency to a `journalctl -f` (journald's receive time to the entry
 * reaching it), by container; resolves `ready` once the follower has seen an entry sent after it
 * started, so that nothing sent later is missed while it opens the journal's files.
 */
function followFirstEntries(): { ready: Promise<void>; latencyOf(id: string): number | undefined; stop(): void } {
  const mark = `skiff-bench-${process.pid}-${Date.now()}`;
  const first = new Map<string, number>();
  let markSeen!: () => void;
  const seen = new Promise<void>((resolve) => (markSeen = resolve));
  const child = followJournalJson('CONTAINER_ID_FULL,MESSAGE', ['_TRANSPORT=journal'], (entry, latency) => {
    if (entry.MESSAGE === mark) markSeen();
    const id = entry.CONTAINER_ID_FULL;
    if (id && !first.has(id) && latency !== undefined) first.set(id, latency);
  });
  const ready = (async () => {
    // journalctl opens every journal file first, which can take seconds on a large journal.
    const timer = setInterval(() => spawn('logger', ['--journald'], { stdio: ['pipe', 'ignore', 'ignore'] }).stdin!.end(`MESSAGE=${mark}\n`), 500);
    let giveUp: NodeJS.Timeout | undefined;
    try {
      await Promise.race([seen, new Promise<never>((_, reject) => (giveUp = setTimeout(() => reject(new Error('journalctl -f did not follow the journal within 60 s')), 60_000)))]);
    } finally {
      clearInterval(timer);
      clearTimeout(giveUp);
    }
  })();
  return { ready, latencyOf: (id) => first.get(id), stop: () => child.kill('SIGTERM') };
}

/**
 * Each new container's first line: its latency to the file and, for the floor, to another
 * `journalctl -f` (which logs-svc's wake-ups of the journal's followers wake too).
 */
async function firstLines(h: RuntimeHarness, pod: Pod, count: number, prefix: string): Promise<{ file: number[]; floor: number[] }> {
  const file: number[] = [];
  const floor: number[] = [];
  const journal = followFirstEntries();
  try {
    await journal.ready;
    for (let i = 0; i < count; i++) {
      const id = await h.createContainer(pod, `${prefix}-${i}`, { command: ['sh', '-c', 'echo first; exec sleep 3600'] });
      const path = (await h.containerStatus(id)).log_path;
      const watch = watchLatency(path);
      await callUnary(h.runtime, 'StartContainer', { container_id: id });
      await waitForSize(path, 1, 10_000);
      // The follower has the entry by journald's change notice, at most half a second after it.
      await new Promise((r) => setTimeout(r, 1000));
      file.push(...(await watch.stop()));
      const toJournal = journal.latencyOf(id);
      if (toJournal !== undefined) floor.push(toJournal);
      await callUnary(h.runtime, 'StopContainer', { container_id: id, timeout: 0 });
      await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
    }
  } finally {
    journal.stop();
  }
  return { file, floor };
}

/**
 * New containers' first lines while ten containers write 100 lines/s each (well below journald's
 * saturation), with logs-svc's CPU over the same window.
 */
async function firstLinesUnderLoad(h: RuntimeHarness, pod: Pod, count: number, logsPid: number): Promise<{ file: number[]; floor: number[]; cpuPercent: number }> {
  const writers: string[] = [];
  for (let i = 0; i < 10; i++) writers.push(await h.runContainer(pod, `writer-${i}`, { command: ['sh', '-c', 'while true; do echo line; usleep 10000; done'] }));
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const cpuBefore = await cpuSeconds(logsPid);
    const t0 = performance.now();
    const first = await firstLines(h, pod, count, 'loaded-first');
    const cpuPercent = (100 * (await cpuSeconds(logsPid)) - 100 * cpuBefore) / ((performance.now() - t0) / 1000);
    return { ...first, cpuPercent };
  } finally {
    for (const id of writers) await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
  }
}

interface Throughput {
  lines: number;
  floorRate: number;
  logsRate: number;
  rssPeak: number;
}

async function sustained(h: RuntimeHarness, pod: Pod, count: number, linesEach: number, logsPid: number): Promise<Throughput> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await h.createContainer(pod, `burst-${count}-${i}`, { command: ['seq', '1', String(linesEach)] }));
  const paths = await Promise.all(ids.map(async (id) => (await h.containerStatus(id)).log_path));
  const total = count * linesEach;
  const floor = followJournal(ids, total);
  await new Promise((r) => setTimeout(r, 500)); // journalctl is following
  const rss = sampleRss(logsPid);
  const size = expectedSize(linesEach);
  const t0 = Date.now();
  await Promise.all(ids.map((id) => callUnary(h.runtime, 'StartContainer', { container_id: id })));
  const filesDone = Math.max(...(await Promise.all(paths.map((p) => waitForSize(p, size, 600_000)))));
  const floorDone = await floor.done;
  floor.stop();
  const rssPeak = await rss.stop();
  for (const id of ids) await callUnary(h.runtime, 'RemoveContainer', { container_id: id });
  return { lines: total, floorRate: total / ((floorDone - t0) / 1000), logsRate: total / ((filesDone - t0) / 1000), rssPeak };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { lines: { type: 'string', default: '200000' }, first: { type: 'string', default: '10' } } });
  const lines = Number(values.lines);
  const h = await startRuntimeHarness({ images: ['busybox'] });
  try {
    const pod = await h.runPod();
    const logsPid = await h.skiff.servicePid('logs-svc');
    if (logsPid === undefined) throw new Error('logs-svc does not run');
    const rssIdle = await rssBytes(logsPid);

    const paced = await h.runContainer(pod, 'paced', { command: ['sh', '-c', 'while true; do echo tick; usleep 20000; done'] });
    const pacedPath = (await h.containerStatus(paced)).log_path;
    let watch = watchLatency(pacedPath);
    let journal = watchJournalLatency(paced);
    await new Promise((r) => setTimeout(r, 5000));
    const idleLatency = (await watch.stop()).slice(10);
    const idleFloor = (await journal.stop()).slice(10);

    const idleCpuBefore = await cpuSeconds(logsPid);
    const idleT0 = performance.now();
    const first = await firstLines(h, pod, Number(values.first), 'first');
    const firstCpuPercent = (100 * (await cpuSeconds(logsPid)) - 100 * idleCpuBefore) / ((performance.now() - idleT0) / 1000);
    const loadedFirst = await firstLinesUnderLoad(h, pod, Number(values.first), logsPid);
    const one = await sustained(h, pod, 1, lines, logsPid);
    watch = watchLatency(pacedPath);
    journal = watchJournalLatency(paced);
    await new Promise((r) => setTimeout(r, 500));
    const ten = await sustained(h, pod, 10, Math.round(lines / 4), logsPid);
    const loadLatency = (await watch.stop()).slice(25);
    const loadFloor = (await journal.stop()).slice(25);
    const p = (samples: number[]): string => `${ms(percentile(samples, 50))} / ${ms(percentile(samples, 99))}`;

    const rate = (t: Throughput): string => `${Math.round(t.logsRate)} lines/s vs floor ${Math.round(t.floorRate)} lines/s (${((100 * t.logsRate) / t.floorRate).toFixed(0)}%, target ≥ 80%)`;
    printTable('Sustained output into CRI log files (floor: journald ingest read with journalctl -f)', [
      [`one container, ${one.lines} lines`, rate(one)],
      [`ten containers, ${ten.lines} lines`, rate(ten)],
    ]);
    printTable('write → file latency, p50 / p99 (floor: the same entries reaching journalctl -f)', [
      [`a line every 20 ms, idle (${idleLatency.length} lines)`, `${p(idleLatency)} vs floor ${p(idleFloor)} (target p99 < 250 ms)`],
      [`under the ten-container load (${loadLatency.length} lines)`, `${p(loadLatency)} vs floor ${p(loadFloor)}`],
      [`a new container's first line (${first.file.length} containers started one at a time)`, `${p(first.file)} vs floor ${p(first.floor)} (target p99 ≤ 50 ms)`],
      [`the same with ten containers writing 100 lines/s each (${loadedFirst.file.length} containers)`, `${p(loadedFirst.file)} vs floor ${p(loadedFirst.floor)} (target p99 ≤ 50 ms)`],
    ]);
    printTable("logs-svc's CPU while new containers start (% of one core)", [
      ['a container started every ~1.5 s, nothing else writing', `${firstCpuPercent.toFixed(1)} %`],
      ['the same beside ten containers writing 100 lines/s each', `${loadedFirst.cpuPercent.toFixed(1)} %`],
    ]);
    printTable('logs-svc RSS', [
      ['idle', mib(rssIdle)],
      ['peak, one container', mib(one.rssPeak)],
      ['peak, ten containers', `${mib(ten.rssPeak)} (target < 80 MB)`],
    ]);
  } finally {
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

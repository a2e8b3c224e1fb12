import { promises as fs } from 'node:fs';
import { atomicWriteJson, type Logger } from '@skiff/common';
import { awaitProcessesExit, findProcesses, readProcStat } from '../process/processes.js';

/** How long children of a killed runtime service get to finish what they were doing. */
const CHILD_GRACE_MS = 15_000;

interface InstanceRecord {
  pid: number;
  pgid: number;
  startTime: number;
}

async function readInstance(file: string): Promise<InstanceRecord | undefined> {
  try {
    const value = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<InstanceRecord>;
    if (typeof value.pid !== 'number' || typeof value.pgid !== 'number' || typeof value.startTime !== 'number') return undefined;
    return value as InstanceRecord;
  } catch {
    return undefined;
  }
}

/**
 * A runtime service killed in the middle of a call leaves its children running: a CNI plugin
 * half-way through ADD, `runc start`, `runc delete`. Whatever they finish after recovery has
 * cleaned up would escape it (an address, a nat rule), so recovery first waits for them (and
 * kills those that take too long). They are found by the killed service's process group, which
 * it leads when started by `skiff up` (each service gets a session of its own). Then this
 * service records itself for the next one.
 */
export async function settlePreviousInstance(file: string, log: Logger): Promise<void> {
  const previous = await readInstance(file);
  if (previous && previous.pgid === previous.pid && previous.pid !== process.pid) {
    const leader = readProcStat(previous.pid);
    if (leader?.startTime === previous.startTime) {
      throw new Error(`another runtime service (pid ${previous.pid}) is running on this run directory; stop it first`);
    }
    const leftovers = await findProcesses((p) => p.pgid === previous.pgid && p.pid !== process.pid && p.startTime >= previous.startTime);
    if (leftovers.length > 0) {
      log.warn({ processes: leftovers.map((p) => ({ pid: p.pid, command: p.argv.slice(0, 3).join(' ') })) }, 'waiting for what the previous runtime service left running');
      const killed = await awaitProcessesExit(leftovers, CHILD_GRACE_MS);
      if (killed > 0) log.warn({ killed }, 'killed children of the previous runtime service that did not finish in time');
    }
  }
  const self = readProcStat(process.pid);
  if (!self) throw new Error('cannot read this process in /proc');
  if (self.pgid !== process.pid) {
    log.info('not a process group leader (not started by skiff up): a later restart cannot wait for children this service leaves behind');
  }
  await atomicWriteJson(file, { pid: process.pid, pgid: self.pgid, startTime: self.startTime } satisfies InstanceRecord);
}

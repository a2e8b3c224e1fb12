import { promises as fs } from 'node:fs';
import { fsyncDir, isProcessAlive, errnoCode } from '@skiff/common';
import { dirname } from 'node:path';
import { StoreError } from './errors.js';

/** Locks held by this process, so a second writer in the same process is refused too. */
const heldHere = new Set<string>();

interface LockOwner {
  pid: number;
  /** Process start time (clock ticks since boot), to tell a reused pid from the owner. */
  startTime?: string;
}

async function processStartTime(pid: number): Promise<string | undefined> {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3; starttime is field 22.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function parseOwner(text: string): LockOwner | undefined {
  const [pidLine, startLine] = text.split('\n');
  const pid = Number.parseInt((pidLine ?? '').trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const startTime = startLine?.trim();
  return startTime ? { pid, startTime } : { pid };
}

async function ownerIsAlive(owner: LockOwner): Promise<boolean> {
  if (!isProcessAlive(owner.pid)) return false;
  if (owner.startTime === undefined) return true;
  const current = await processStartTime(owner.pid);
  return current === undefined || current === owner.startTime;
}

export class WriterLock {
  private released = false;

  private constructor(readonly path: string) {}

  /**
   * Takes the lock file (first line: pid). A lock left by a dead process is taken over; one held by
   * a live process is refused with its pid.
   */
  static async acquire(path: string): Promise<WriterLock> {
    if (heldHere.has(path)) {
      throw new StoreError('locked', `image store lock ${path} is already held by this process (pid ${process.pid}); open the store as writer only once`);
    }
    const content = `${process.pid}\n${(await processStartTime(process.pid)) ?? ''}\n`;
    for (let attempt = 0; attempt < 5; attempt++) {
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(path, 'wx', 0o600);
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw err;
        await WriterLock.removeIfStale(path);
        continue;
      }
      try {
        await handle.writeFile(content);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fsyncDir(dirname(path));
      heldHere.add(path);
      return new WriterLock(path);
    }
    throw new StoreError('locked', `could not take the image store lock ${path}: it keeps being recreated by another process`);
  }

  private static async removeIfStale(path: string): Promise<void> {
    let text: string;
    try {
      text = await fs.readFile(path, 'utf8');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    const owner = parseOwner(text);
    if (owner && owner.pid !== process.pid && (await ownerIsAlive(owner))) {
      throw new StoreError(
        'locked',
        `image store is locked by process ${owner.pid} (${path}); only one image service may write the store. Stop that process, or delete the file if pid ${owner.pid} is not a Skiff image service`,
      );
    }
    // Dead owner, a reused pid, or our own pid left over from an earlier life: stale.
    // Remove only if it still holds what we judged, so a lock someone else just took survives.
    const again = await fs.readFile(path, 'utf8').catch(() => undefined);
    if (again === text) await fs.rm(path, { force: true });
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    heldHere.delete(this.path);
    const text = await fs.readFile(this.path, 'utf8').catch(() => undefined);
    if (text !== undefined && parseOwner(text)?.pid === process.pid) await fs.rm(this.path, { force: true });
  }
}

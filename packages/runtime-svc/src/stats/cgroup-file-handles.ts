import { closeSync, constants, openSync, readSync } from 'node:fs';
import { join } from 'node:path';

const BUFFER_SIZE = 8192;
/** Reads are synchronous, so one buffer serves them all. */
const buffer = Buffer.allocUnsafeSlow(BUFFER_SIZE);
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Files of one cgroup directory kept open, and the sweep that last found them read. */
interface DirHandles {
  files: Map<string, number>;
  readSinceSweep: boolean;
}

export interface CgroupFileHandlesOptions {
  /** Open files kept at most; beyond it the least recently read directory's are closed. */
  maxOpen?: number;
  /** How often directories not read since the previous look are closed (0: never, by a timer). */
  sweepEveryMs?: number;
}

/**
 * Cgroup files kept open between readings and read again from offset 0, on the event loop.
 *
 * The kernel makes a cgroup file's text anew on every read from its start, and with no disk behind
 * it an open and a close cost about four times the read itself: a hundred containers' stats are a
 * thousand such files, every 10 s from the kubelet. A removed cgroup's files answer ENODEV and are
 * closed then, as are the files of directories not read between two sweeps (a container gone
 * between readings) and, beyond `maxOpen`, those of the least recently read directory. Links are
 * never followed (O_NOFOLLOW) and no open blocks (O_NONBLOCK).
 */
export class CgroupFileHandles {
  private readonly dirs = new Map<string, DirHandles>();
  private openCount = 0;
  private readonly maxOpen: number;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(options: CgroupFileHandlesOptions = {}) {
    this.maxOpen = options.maxOpen ?? 4096;
    const sweepEveryMs = options.sweepEveryMs ?? 120_000;
    if (sweepEveryMs > 0) {
      this.timer = setInterval(() => this.sweep(), sweepEveryMs);
      this.timer.unref();
    }
  }

  /** The file's text, or undefined when it cannot be opened or read. */
  read(dir: string, name: string): string | undefined {
    let handles = this.dirs.get(dir);
    if (handles) {
      // Most recently read last: Map keeps insertion order.
      this.dirs.delete(dir);
      this.dirs.set(dir, handles);
      handles.readSinceSweep = true;
      const kept = handles.files.get(name);
      if (kept !== undefined) {
        const text = readFromStart(kept);
        if (text !== undefined) return text;
        // ENODEV: the cgroup was removed, perhaps made again under the same path since.
        this.closeFile(handles, name, kept);
      }
    }
    let fd: number;
    try {
      fd = openSync(join(dir, name), OPEN_FLAGS);
    } catch {
      return undefined;
    }
    const text = readFromStart(fd);
    if (text === undefined) {
      closeSync(fd);
      return undefined;
    }
    if (!handles) {
      handles = { files: new Map(), readSinceSweep: true };
      this.dirs.set(dir, handles);
    }
    handles.files.set(name, fd);
    this.openCount++;
    this.keepWithinBound(dir);
    return text;
  }

  /** Closes the files kept for these directories (a container's, when it is removed). */
  closeDirs(dirs: Iterable<string | undefined>): void {
    for (const dir of dirs) if (dir !== undefined) this.closeDir(dir);
  }

  /** Closes the files of directories not read since the previous sweep. */
  sweep(): void {
    for (const [dir, handles] of this.dirs) {
      if (handles.readSinceSweep) handles.readSinceSweep = false;
      else this.closeDir(dir);
    }
  }

  /** Files open now. */
  get size(): number {
    return this.openCount;
  }

  /** Closes every file and stops the sweeps. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    for (const dir of [...this.dirs.keys()]) this.closeDir(dir);
  }

  private keepWithinBound(current: string): void {
    for (const dir of this.dirs.keys()) {
      if (this.openCount <= this.maxOpen || dir === current) return;
      this.closeDir(dir);
    }
  }

  private closeDir(dir: string): void {
    const handles = this.dirs.get(dir);
    if (!handles) return;
    for (const [name, fd] of handles.files) this.closeFile(handles, name, fd);
    this.dirs.delete(dir);
  }

  private closeFile(handles: DirHandles, name: string, fd: number): void {
    handles.files.delete(name);
    this.openCount--;
    closeSync(fd);
  }
}

/** The whole text from offset 0, or undefined when the read fails. */
function readFromStart(fd: number): string | undefined {
  try {
    let n = readSync(fd, buffer, 0, BUFFER_SIZE, 0);
    if (n < BUFFER_SIZE) return buffer.toString('utf8', 0, n);
    // A long file (cgroup.procs of a busy cgroup): the rest, piece by piece.
    const pieces = [Buffer.from(buffer)];
    let position = n;
    while ((n = readSync(fd, buffer, 0, BUFFER_SIZE, position)) > 0) {
      pieces.push(Buffer.from(buffer.subarray(0, n)));
      position += n;
    }
    return Buffer.concat(pieces).toString('utf8');
  } catch {
    return undefined;
  }
}

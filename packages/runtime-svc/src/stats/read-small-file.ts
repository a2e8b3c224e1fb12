import { close, closeSync, constants, open, openSync, read, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

const BUFFER_SIZE = 8192;
/** Read buffers handed back after use: a metrics call reads about a thousand files. */
const spare: Buffer[] = [];
const MAX_SPARE = 64;

/**
 * A small file's text (cgroup and /proc files), or undefined when it cannot be read: one open and
 * one read through the thread pool, where fs.promises.readFile makes four or more round trips
 * (about ten times slower for a hundred pods' cgroup files). A file that fills the buffer is read
 * again whole.
 */
export function readSmallFile(path: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    open(path, 'r', (openErr, fd) => {
      if (openErr) return resolve(undefined);
      const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(BUFFER_SIZE);
      read(fd, buffer, 0, BUFFER_SIZE, null, (readErr, n) => {
        close(fd, () => undefined);
        const text = readErr || n === BUFFER_SIZE ? undefined : buffer.toString('utf8', 0, n);
        if (spare.length < MAX_SPARE) spare.push(buffer);
        if (readErr) resolve(undefined);
        else if (text !== undefined) resolve(text);
        else readFile(path, 'utf8').then(resolve, () => resolve(undefined));
      });
    });
  });
}

/**
 * A cgroup file's text (undefined when it cannot be read), read on the event loop: the kernel makes
 * it up on the spot, with no disk behind it, so an open, a read and a close take a few microseconds
 * each. Through the thread pool the same three steps cost about twice the CPU in callbacks: a
 * hundred containers' stats are a thousand such files, every 10-15 s from the kubelet.
 */
export function readCgroupFileNow(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(BUFFER_SIZE);
  try {
    let n = readSync(fd, buffer, 0, BUFFER_SIZE, null);
    if (n < BUFFER_SIZE) return buffer.toString('utf8', 0, n);
    // A long file (cgroup.procs of a busy cgroup): the rest, piece by piece.
    const pieces = [Buffer.from(buffer)];
    while ((n = readSync(fd, buffer, 0, BUFFER_SIZE, null)) > 0) pieces.push(Buffer.from(buffer.subarray(0, n)));
    return Buffer.concat(pieces).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
    if (spare.length < MAX_SPARE) spare.push(buffer);
  }
}

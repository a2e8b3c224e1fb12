import { close, open, read } from 'node:fs';
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

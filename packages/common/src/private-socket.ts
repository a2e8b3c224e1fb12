import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Makes a listening unix socket appear at `socketPath` with mode 0600 (root only), replacing a
 * stale one left by a killed process. `bind` starts the server listening on the path it is given.
 *
 * The socket is bound inside a directory made for this call by mkdtemp beside `socketPath`:
 * mkdtemp creates a new directory with mode 0700 or fails, so it is ours, not a link and not
 * enterable by anyone else. Whatever mode the umask gives the fresh socket, nobody else can reach
 * it there; it is chmod-ed to 0600 and only then renamed into place (atomically, on the same
 * filesystem). The process umask is never touched: changing it across the bind's `await` would
 * give every file created meanwhile by other work in the process the wrong mode.
 */
export async function bindPrivateSocket(socketPath: string, bind: (path: string) => Promise<void>): Promise<void> {
  const dir = dirname(socketPath);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const staging = await fs.mkdtemp(join(dir, '.bind-'));
  try {
    const path = join(staging, 's');
    await bind(path);
    await fs.chmod(path, 0o600);
    await fs.rename(path, socketPath);
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}

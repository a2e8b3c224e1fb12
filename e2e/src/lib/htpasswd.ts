/**
 * bcrypt htpasswd files for the registry's basic auth, made with apache2-utils.
 *
 *   interface Credentials { username, password }
 *   htpasswdLine(credentials): Promise<string>            "user:$2y$..."
 *   writeHtpasswdFile(path, users: Credentials[]): Promise<void>
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Credentials {
  username: string;
  password: string;
}

export async function htpasswdLine(credentials: Credentials): Promise<string> {
  const { stdout } = await run('htpasswd', ['-Bbn', credentials.username, credentials.password]);
  return stdout.trim();
}

export async function writeHtpasswdFile(path: string, users: Credentials[]): Promise<void> {
  const lines = await Promise.all(users.map(htpasswdLine));
  await writeFile(path, lines.join('\n') + '\n', { mode: 0o600 });
}

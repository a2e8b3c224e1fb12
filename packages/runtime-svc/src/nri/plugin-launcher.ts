import { spawn, type ChildProcess } from 'node:child_process';
import { constants, promises as fs } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { errorMessage, type Logger } from '@skiff/common';

/** A pre-installed plugin's configuration file is read only up to this size. */
const MAX_CONFIG_BYTES = 1 << 20;
const PLUGIN_FILE = /^([0-9]{2})-([A-Za-z0-9][A-Za-z0-9._-]{0,62})$/;

export interface LaunchedPlugin {
  index: string;
  name: string;
  config: string;
  child: ChildProcess;
  socket: Socket;
}

/** Root's alone: a regular file (not a link) owned by root, writable by nobody else. */
async function rootsAlone(path: string, what: string, log: Logger): Promise<boolean> {
  const st = await fs.lstat(path);
  if (!st.isFile() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    log.warn({ path }, `NRI ${what} skipped: it must be a regular file owned by root and writable by root alone`);
    return false;
  }
  return true;
}

/** The plugin's configuration: "<index>-<name>.conf", else "<name>.conf", else none. */
async function configFor(dir: string, index: string, name: string, log: Logger): Promise<string | undefined> {
  for (const file of [`${index}-${name}.conf`, `${name}.conf`]) {
    const path = join(dir, file);
    let handle;
    try {
      handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    try {
      if (!(await rootsAlone(path, 'plugin configuration', log))) return undefined;
      const buffer = Buffer.alloc(MAX_CONFIG_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead > MAX_CONFIG_BYTES) throw new Error(`${path} is larger than ${MAX_CONFIG_BYTES} bytes`);
      return buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  }
  return '';
}

/**
 * Starts the pre-installed plugins of `pluginDir` ("<index>-<name>" executables, root's alone),
 * each with one end of a connected unix socket pair as fd 3 (NRI_PLUGIN_SOCKET=3) and its name and
 * index in NRI_PLUGIN_NAME and NRI_PLUGIN_IDX. A missing directory means none. A plugin whose
 * configuration cannot be read is not started.
 */
export async function launchPreinstalledPlugins(pluginDir: string, configDir: string, log: Logger): Promise<LaunchedPlugin[]> {
  let entries: string[];
  try {
    entries = (await fs.readdir(pluginDir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const launched: LaunchedPlugin[] = [];
  for (const entry of entries) {
    const match = PLUGIN_FILE.exec(entry);
    if (!match) continue;
    const [, index = '', name = ''] = match;
    const path = join(pluginDir, entry);
    try {
      if (!(await rootsAlone(path, 'plugin', log))) continue;
      if (((await fs.lstat(path)).mode & 0o100) === 0) continue;
      const config = await configFor(configDir, index, name, log);
      if (config === undefined) continue;
      const child = spawn(path, [], {
        stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
        env: { NRI_PLUGIN_NAME: name, NRI_PLUGIN_IDX: index, NRI_PLUGIN_SOCKET: '3', PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
      });
      const socket = child.stdio[3] as Socket;
      // What it says on stderr goes to the log, a line at a time, cut to a bound.
      let pending = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        pending = (pending + chunk.toString('utf8')).slice(-8192);
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) if (line) log.debug({ plugin: entry, line: line.slice(0, 1024) }, 'NRI plugin output');
      });
      child.on('error', (err) => log.warn({ plugin: entry, err: errorMessage(err) }, 'NRI plugin could not be started'));
      child.on('exit', (code, signal) => log.info({ plugin: entry, code, signal }, 'NRI plugin exited'));
      launched.push({ index, name, config, child, socket });
    } catch (err) {
      log.warn({ plugin: entry, err: errorMessage(err) }, 'NRI plugin not started');
    }
  }
  return launched;
}

/**
 * Runs the real distribution registry (Debian's docker-registry) on 127.0.0.1.
 *
 *   interface RegistryTokenAuth { realm, service, issuer, rootCertBundle }
 *   interface RegistryOptions {
 *     htpasswd?: Credentials | Credentials[]   basic auth (bcrypt file via htpasswd -Bbn)
 *     token?: RegistryTokenAuth                bearer token auth (see token-server.ts)
 *     schema1?: boolean                        accept signed schema1 manifests
 *     startTimeoutMs?: number
 *   }
 *   startRegistry(options?): Promise<Registry>
 *   interface Registry {
 *     url ("http://127.0.0.1:<port>"), host ("127.0.0.1:<port>"), port, pid,
 *     dir (temp dir), storageDir, logPath,
 *     blobDataPath(digest): string             the stored blob's data file
 *     corruptBlob(digest): Promise<void>       same size, different bytes
 *     readLog(): Promise<string>
 *     stop(): Promise<void>                    kills the process by PID, removes the temp dir
 *   }
 *
 * Storage is a fresh temp dir per registry with delete enabled. A registry that
 * is still running when the test process exits is killed, also when the process
 * dies abruptly (parent-death signal via setpriv); only its temp dir stays then.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getFreePort } from './free-port.js';
import { writeHtpasswdFile, type Credentials } from './htpasswd.js';
import { digestHex } from './sha256.js';
import { makeTempDir, removeDir } from './tmp.js';

export const REGISTRY_BINARY = '/usr/bin/docker-registry';

export interface RegistryTokenAuth {
  realm: string;
  service: string;
  issuer: string;
  rootCertBundle: string;
}

export interface RegistryOptions {
  htpasswd?: Credentials | Credentials[];
  token?: RegistryTokenAuth;
  schema1?: boolean;
  startTimeoutMs?: number;
}

export interface Registry {
  url: string;
  host: string;
  port: number;
  pid: number;
  dir: string;
  storageDir: string;
  logPath: string;
  blobDataPath(digest: string): string;
  corruptBlob(digest: string): Promise<void>;
  readLog(): Promise<string>;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const proc of running) proc.kill('SIGKILL');
    });
  }
}

const quote = (value: string): string => JSON.stringify(value);

function renderConfig(port: number, storageDir: string, auth: string[], schema1: boolean): string {
  const lines = [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  formatter: text',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${quote(storageDir)}`,
    '  delete:',
    '    enabled: true',
    '  maintenance:',
    '    uploadpurging:',
    '      enabled: false',
    'http:',
    `  addr: ${quote(`127.0.0.1:${port}`)}`,
    `  secret: ${quote(randomBytes(16).toString('hex'))}`,
    '  headers:',
    '    X-Content-Type-Options: [nosniff]',
    'health:',
    '  storagedriver:',
    '    enabled: false',
    ...auth,
  ];
  if (schema1) lines.push('compatibility:', '  schema1:', '    enabled: true');
  return lines.join('\n') + '\n';
}

async function authConfig(dir: string, options: RegistryOptions): Promise<string[]> {
  if (options.htpasswd !== undefined && options.token !== undefined) {
    throw new Error('a registry takes either htpasswd or token auth, not both');
  }
  if (options.htpasswd !== undefined) {
    const users = Array.isArray(options.htpasswd) ? options.htpasswd : [options.htpasswd];
    const path = join(dir, 'htpasswd');
    await writeHtpasswdFile(path, users);
    return ['auth:', '  htpasswd:', '    realm: "skiff-test-registry"', `    path: ${quote(path)}`];
  }
  if (options.token !== undefined) {
    const t = options.token;
    return [
      'auth:',
      '  token:',
      `    realm: ${quote(t.realm)}`,
      `    service: ${quote(t.service)}`,
      `    issuer: ${quote(t.issuer)}`,
      `    rootcertbundle: ${quote(t.rootCertBundle)}`,
    ];
  }
  return [];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves once /v2/ answers at all (200 without auth, 401 with auth). */
async function waitUntilServing(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('registry exited during start-up');
    try {
      const response = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.status === 200 || response.status === 401) return;
    } catch {
      // not listening yet
    }
    await delay(50);
  }
  throw new Error(`registry at ${url} did not answer within ${timeoutMs} ms`);
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function launch(dir: string, configPath: string, logPath: string): Promise<ChildProcess> {
  const log = await open(logPath, 'a');
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('REGISTRY_')));
  try {
    // setpriv execs the registry in place (same PID) with a parent-death signal, so a
    // test process killed before it can clean up does not leave registries behind.
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', REGISTRY_BINARY, 'serve', configPath], {
      cwd: dir,
      env,
      stdio: ['ignore', log.fd, log.fd],
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    killOnExit(child);
    return child;
  } finally {
    await log.close();
  }
}

export async function startRegistry(options: RegistryOptions = {}): Promise<Registry> {
  const dir = await makeTempDir('skiff-registry');
  const storageDir = join(dir, 'storage');
  const configPath = join(dir, 'config.yml');
  const logPath = join(dir, 'registry.log');
  try {
    const auth = await authConfig(dir, options);
    let lastError: unknown;
    for (let attempt = 0; attempt < 4; attempt++) {
      const port = await getFreePort();
      await writeFile(configPath, renderConfig(port, storageDir, auth, options.schema1 ?? false));
      const child = await launch(dir, configPath, logPath);
      const url = `http://127.0.0.1:${port}`;
      try {
        await waitUntilServing(url, child, options.startTimeoutMs ?? 15_000);
      } catch (error) {
        lastError = error;
        await stopProcess(child);
        const log = await readFile(logPath, 'utf8').catch(() => '');
        if (/address already in use/.test(log)) continue;
        throw new Error(`${(error as Error).message}\n${log}`);
      }
      return makeHandle(child, port, dir, storageDir, logPath);
    }
    throw lastError;
  } catch (error) {
    await removeDir(dir);
    throw error;
  }
}

function makeHandle(child: ChildProcess, port: number, dir: string, storageDir: string, logPath: string): Registry {
  const blobDataPath = (digest: string): string => {
    const hex = digestHex(digest);
    return join(storageDir, 'docker/registry/v2/blobs/sha256', hex.slice(0, 2), hex, 'data');
  };
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    dir,
    storageDir,
    logPath,
    blobDataPath,
    async corruptBlob(digest: string): Promise<void> {
      const path = blobDataPath(digest);
      const { size } = await stat(path);
      const file = await open(path, 'r+');
      try {
        // Inverting every byte keeps the size and guarantees different content.
        const chunk = Buffer.alloc(1024 * 1024);
        for (let offset = 0; offset < size; offset += chunk.length) {
          const { bytesRead } = await file.read(chunk, 0, Math.min(chunk.length, size - offset), offset);
          for (let i = 0; i < bytesRead; i++) chunk[i] = chunk[i]! ^ 0xff;
          await file.write(chunk, 0, bytesRead, offset);
        }
      } finally {
        await file.close();
      }
    },
    readLog: () => readFile(logPath, 'utf8'),
    async stop(): Promise<void> {
      await stopProcess(child);
      await removeDir(dir);
    },
  };
}

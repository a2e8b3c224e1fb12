import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sha256 } from './tar.js';

export const DOCKER_REGISTRY_BINARY = '/usr/bin/docker-registry';

export function haveDockerRegistry(): boolean {
  return existsSync(DOCKER_REGISTRY_BINARY);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A distribution registry on 127.0.0.1 with its own storage, optionally behind htpasswd basic auth. */
export class LocalRegistry {
  private constructor(
    readonly host: string,
    private readonly child: ChildProcess,
    private readonly dir: string,
    private readonly output: () => string,
    readonly basicAuth?: string,
  ) {}

  static async start(opts: { htpasswd?: { username: string; password: string } } = {}): Promise<LocalRegistry> {
    // The free port may be taken between probing and binding; try a few.
    for (let attempt = 1; ; attempt++) {
      try {
        return await LocalRegistry.startOnce(opts);
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  }

  private static async startOnce(opts: { htpasswd?: { username: string; password: string } }): Promise<LocalRegistry> {
    const dir = await mkdtemp(join(tmpdir(), 'skiff-registry-'));
    const port = await freePort();
    const host = `127.0.0.1:${port}`;
    let auth = '';
    let basicAuth: string | undefined;
    if (opts.htpasswd) {
      const line = execFileSync('htpasswd', ['-Bbn', opts.htpasswd.username, opts.htpasswd.password], { encoding: 'utf8' });
      await writeFile(join(dir, 'htpasswd'), line.trim() + '\n');
      auth = `auth:\n  htpasswd:\n    realm: skiff-test\n    path: ${join(dir, 'htpasswd')}\n`;
      basicAuth = `Basic ${Buffer.from(`${opts.htpasswd.username}:${opts.htpasswd.password}`).toString('base64')}`;
    }
    const config =
      'version: 0.1\n' +
      'log:\n  level: error\n  accesslog:\n    disabled: true\n' +
      `storage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\n  delete:\n    enabled: true\n` +
      `http:\n  addr: ${host}\n  secret: skiff-test-secret\n` +
      auth;
    await writeFile(join(dir, 'config.yml'), config);
    const child = spawn(DOCKER_REGISTRY_BINARY, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const registry = new LocalRegistry(host, child, dir, () => output, basicAuth);
    try {
      await registry.waitReady();
    } catch (err) {
      await registry.stop();
      throw err;
    }
    return registry;
  }

  private async waitReady(): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`docker-registry exited with ${this.child.exitCode}: ${this.output()}`);
      try {
        const res = await fetch(`http://${this.host}/v2/`);
        await res.arrayBuffer();
        if (res.status === 200 || res.status === 401) return;
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    throw new Error(`docker-registry did not come up on ${this.host}: ${this.output()}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.pid !== undefined) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      process.kill(this.child.pid, 'SIGTERM');
      const timer = setTimeout(() => this.child.pid !== undefined && this.child.exitCode === null && process.kill(this.child.pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.basicAuth ? { authorization: this.basicAuth, ...extra } : extra;
  }

  /** Uploads a blob in one monolithic PUT, as the distribution spec allows. */
  async pushBlob(repository: string, bytes: Buffer): Promise<string> {
    const digest = sha256(bytes);
    const start = await fetch(`http://${this.host}/v2/${repository}/blobs/uploads/`, { method: 'POST', headers: this.headers() });
    await start.arrayBuffer();
    if (start.status !== 202) throw new Error(`starting upload to ${repository}: ${start.status}`);
    const location = new URL(start.headers.get('location')!, `http://${this.host}`);
    location.searchParams.set('digest', digest);
    const put = await fetch(location, {
      method: 'PUT',
      headers: this.headers({ 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) }),
      body: bytes,
    });
    const text = await put.text();
    if (put.status !== 201) throw new Error(`uploading ${digest} to ${repository}: ${put.status} ${text}`);
    return digest;
  }

  async pushManifest(repository: string, reference: string, mediaType: string, bytes: Buffer): Promise<string> {
    const res = await fetch(`http://${this.host}/v2/${repository}/manifests/${reference}`, {
      method: 'PUT',
      headers: this.headers({ 'content-type': mediaType }),
      body: bytes,
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`pushing manifest ${repository}:${reference}: ${res.status} ${text}`);
    return sha256(bytes);
  }

  async pushImage(repository: string, tag: string, image: { config: Buffer; layers: Buffer[]; manifest: Buffer; mediaType: string }): Promise<void> {
    await this.pushBlob(repository, image.config);
    for (const layer of image.layers) await this.pushBlob(repository, layer);
    await this.pushManifest(repository, tag, image.mediaType, image.manifest);
  }
}

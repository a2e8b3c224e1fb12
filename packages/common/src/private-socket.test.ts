import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server as GrpcServer } from '@grpc/grpc-js';
import { bindPrivateSocket } from './private-socket.js';
import { listenOnUnixSocket } from './unix-socket-server.js';

/** Creates files one after another until `until` settles; answers their modes. */
async function createFilesUntil(dir: string, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const modes: number[] = [];
  for (let i = 0; !done || i === 0; i++) {
    const file = join(dir, `f${i}`);
    await fs.writeFile(file, 'x');
    modes.push((await fs.stat(file)).mode & 0o777);
  }
  return modes;
}

async function withUmask<T>(mask: number, run: () => Promise<T>): Promise<T> {
  const old = process.umask(mask);
  try {
    return await run();
  } finally {
    process.umask(old);
  }
}

test('a socket bound privately is 0600, replaces a stale file, and files made meanwhile keep their mode', async () => {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-sock-'));
  const socket = join(dir, 'run', 'x.sock');
  const server: Server = createServer();
  try {
    await fs.mkdir(join(dir, 'run'));
    await fs.writeFile(socket, 'stale');
    const modes = await withUmask(0o022, async () => {
      const bound = bindPrivateSocket(socket, (path) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve())));
      const [made] = await Promise.all([createFilesUntil(join(dir, 'run'), bound), bound]);
      return made;
    });
    assert.ok((await fs.lstat(socket)).isSocket());
    assert.equal((await fs.stat(socket)).mode & 0o777, 0o600);
    assert.deepEqual(new Set(modes), new Set([0o644]));
    assert.deepEqual((await fs.readdir(join(dir, 'run'))).filter((f) => f.startsWith('.bind-')), [], 'the staging directory is removed');
  } finally {
    await new Promise((r) => server.close(r));
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('a gRPC server on a unix socket: mode 0600, and the process umask stays as it was during the bind', async () => {
  const dir = await fs.mkdtemp(join(tmpdir(), 'skiff-sock-'));
  const socket = join(dir, 'grpc.sock');
  const server = new GrpcServer();
  try {
    const modes = await withUmask(0o022, async () => {
      const listening = listenOnUnixSocket(server, socket);
      const [made] = await Promise.all([createFilesUntil(join(dir), listening), listening]);
      return made;
    });
    assert.equal((await fs.stat(socket)).mode & 0o777, 0o600);
    assert.deepEqual(new Set(modes), new Set([0o644]), 'files created while the socket was being bound got another mode');
  } finally {
    server.forceShutdown();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

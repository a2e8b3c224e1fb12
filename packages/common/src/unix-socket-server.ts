import { promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';

export interface UnixSocketServer {
  server: Server;
  socketPath: string;
  close(): Promise<void>;
}

/**
 * Binds a gRPC server to a unix socket that only root can reach: the directory is 0700 when we create it
 * and the socket itself 0600. A stale socket left by a killed process is replaced.
 */
export async function listenOnUnixSocket(server: Server, socketPath: string): Promise<UnixSocketServer> {
  await fs.mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  await fs.rm(socketPath, { force: true });
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    process.umask(oldMask);
  }
  await fs.chmod(socketPath, 0o600);
  return {
    server,
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }).then(() => fs.rm(socketPath, { force: true })),
  };
}

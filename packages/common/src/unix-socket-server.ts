import { promises as fs } from 'node:fs';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { bindPrivateSocket } from './private-socket.js';

export interface UnixSocketServer {
  server: Server;
  socketPath: string;
  close(): Promise<void>;
}

/**
 * Binds a gRPC server to a unix socket that only root can reach (mode 0600; its directory is 0700
 * when we create it). A stale socket left by a killed process is replaced.
 */
export async function listenOnUnixSocket(server: Server, socketPath: string): Promise<UnixSocketServer> {
  await bindPrivateSocket(
    socketPath,
    (path) => new Promise<void>((resolve, reject) => server.bindAsync(`unix:${path}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()))),
  );
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

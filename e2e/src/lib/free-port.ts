/**
 * Loopback port allocation.
 *
 *   getFreePort(): Promise<number>   a TCP port on 127.0.0.1 that was free a moment ago
 *
 * The port is released before returning, so a caller that binds later can lose
 * a race; callers that spawn servers retry with a new port when binding fails.
 */
import { createServer } from 'node:net';

export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the allocated port'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

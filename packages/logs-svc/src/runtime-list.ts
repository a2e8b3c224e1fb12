import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import type { Logger } from '@skiff/common/core';
import { callUnary, createRuntimeClient } from '@skiff/proto';

/**
 * Every container runtime-svc knows with its CRI log path, asked over its CRI socket; tries again
 * until runtime-svc answers (it may be starting too, or restarting). A stop meanwhile ends the
 * process, retries and all. The calls and fields used are a contract, written down in
 * @skiff/common's src/contracts/README.md.
 */
export async function listContainerLogs(socket: string, log: Logger): Promise<Map<string, string>> {
  for (let attempt = 0; ; attempt++) {
    const client = createRuntimeClient(socket);
    try {
      const { containers } = await callUnary(client, 'ListContainers', {}, { timeoutMs: 30_000 });
      const out = new Map<string, string>();
      for (const c of containers) {
        try {
          const answer = await callUnary(client, 'ContainerStatus', { container_id: c.id }, { timeoutMs: 30_000 });
          out.set(c.id, answer.status?.log_path ?? '');
        } catch (err) {
          if ((err as { code?: number }).code !== status.NOT_FOUND) throw err;
        }
      }
      return out;
    } catch (err) {
      if (attempt % 10 === 0) log.info({ socket, err: (err as Error).message }, 'waiting for runtime-svc to list its containers');
      await sleep(500);
    } finally {
      client.close();
    }
  }
}

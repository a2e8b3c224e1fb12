import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client, Server, ServerCredentials, credentials, status, type ServiceDefinition } from '@grpc/grpc-js';
import { unaryCall } from './grpc-calls.js';
import { createLogger } from './logger.js';
import { StatusError } from './grpc-status.js';

const bytes = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const service: ServiceDefinition = {
  Echo: { path: '/test.Test/Echo', requestStream: false, responseStream: false, requestSerialize: bytes.serialize, requestDeserialize: bytes.deserialize, responseSerialize: bytes.serialize, responseDeserialize: bytes.deserialize },
};

/** A server whose one method is `implementation` through unaryCall, and a client of it. */
async function withEcho(implementation: (request: Buffer, signal: AbortSignal) => Promise<Buffer>, test: (echo: (deadlineMs?: number) => Promise<Buffer>) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-grpc-calls-'));
  const server = new Server();
  const toStatus = (err: unknown, signal?: AbortSignal): StatusError => new StatusError(signal?.aborted ? status.CANCELLED : status.UNKNOWN, String(err));
  server.addService(service, { Echo: unaryCall(createLogger('test', 'fatal'), 'Echo', toStatus, implementation) });
  const address = `unix://${join(dir, 'test.sock')}`;
  await new Promise<void>((resolve, reject) => server.bindAsync(address, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  const client = new Client(address, credentials.createInsecure());
  const echo = (deadlineMs?: number): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest('/test.Test/Echo', bytes.serialize, bytes.deserialize, Buffer.from('hi'), { deadline: deadlineMs === undefined ? Infinity : Date.now() + deadlineMs }, (err, value) => (err ? reject(err) : resolve(value!))),
    );
  try {
    await test(echo);
  } finally {
    client.close();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  }
}

describe('unaryCall', () => {
  it("leaves an answered call's signal alone when its stream closes", async () => {
    const signals: AbortSignal[] = [];
    await withEcho(
      async (request, signal) => {
        signals.push(signal);
        return request;
      },
      async (echo) => {
        for (let i = 0; i < 3; i++) assert.equal((await echo()).toString(), 'hi');
        // The stream's close, which grpc-js reports as a cancellation, comes after the answer.
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.deepEqual(signals.map((s) => s.aborted), [false, false, false]);
      },
    );
  });

  it('aborts the signal of a call the client gives up on before its answer', async () => {
    let aborted: Promise<void> | undefined;
    await withEcho(
      (request, signal) => {
        aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve()));
        return aborted.then(() => request);
      },
      async (echo) => {
        await assert.rejects(echo(200), (err: { code?: number }) => err.code === status.DEADLINE_EXCEEDED);
        await aborted;
      },
    );
  });
});

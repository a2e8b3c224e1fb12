/**
 * The transport floor of the image service's read calls: a grpc-js server on a unix socket, with
 * the daemons' channel options, that answers ImageStatus and ListImages with fixed responses
 * (read as JSON from stdin) and does nothing else. Prints "ready" once it listens.
 *
 *   node bench/dist/grpc-floor-server.js <socket>   (stdin: {"status": ImageStatusResponse, "list": ListImagesResponse})
 */
import { rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { CHANNEL_OPTIONS, imageServiceDefinition } from '@skiff/proto';

async function main(): Promise<void> {
  const socket = process.argv[2];
  if (socket === undefined) throw new Error('usage: grpc-floor-server.js <socket>');
  const { status, list } = JSON.parse(await text(process.stdin)) as { status: unknown; list: unknown };
  const answer =
    (response: unknown) =>
    (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>): void =>
      callback(null, response);
  const handlers: UntypedServiceImplementation = {};
  for (const method of Object.keys(imageServiceDefinition)) handlers[method] = answer({});
  handlers['ImageStatus'] = answer(status);
  handlers['ListImages'] = answer(list);
  const server = new Server(CHANNEL_OPTIONS);
  server.addService(imageServiceDefinition, handlers);
  rmSync(socket, { force: true });
  server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    process.stdout.write('ready\n');
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

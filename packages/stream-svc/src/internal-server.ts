import { promises as fs } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from '@skiff/common';
import { InvalidStreamRequest, parseStreamRequest, type StreamRequest } from './requests.js';
import { TokenStore, TooManyTokens } from './token-store.js';

/**
 * The runtime service's door: POST /v1/streams with a resolved request answers 201 {url}; 400 for
 * an invalid request, 429 when too many are outstanding. Root only.
 */
export async function startInternalServer(options: { socket: string; tokens: TokenStore; baseUrl: () => string; log: Logger }): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  app.post('/v1/streams', async (req, reply) => {
    let request: StreamRequest;
    try {
      request = parseStreamRequest(req.body);
    } catch (err) {
      if (err instanceof InvalidStreamRequest) return reply.code(400).send({ message: err.message });
      throw err;
    }
    try {
      const token = options.tokens.issue(request);
      return reply.code(201).send({ url: `${options.baseUrl()}/${request.kind}/${token}` });
    } catch (err) {
      if (err instanceof TooManyTokens) return reply.code(429).send({ message: err.message });
      throw err;
    }
  });
  await fs.rm(options.socket, { force: true });
  const oldMask = process.umask(0o177);
  try {
    await app.listen({ path: options.socket });
  } finally {
    process.umask(oldMask);
  }
  await fs.chmod(options.socket, 0o600);
  options.log.debug({ socket: options.socket }, 'internal socket ready');
  return app;
}

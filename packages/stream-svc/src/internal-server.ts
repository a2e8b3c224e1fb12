import Fastify, { type FastifyInstance } from 'fastify';
import { bindPrivateSocket, ContractViolation, parseStreamRequest, STREAM_REGISTRATION_PATH, type ErrorAnswer, type Logger, type StreamRegistered, type StreamRequest } from '@skiff/common/core';
import { TokenStore, TooManyTokens } from './token-store.js';

/**
 * The runtime service's door (the stream-registration contract of @skiff/common): a resolved
 * request answers 201 {url}; 400 naming the field that breaks the contract, 429 when too many are
 * outstanding. Root only.
 */
export async function startInternalServer(options: { socket: string; tokens: TokenStore; baseUrl: () => string; log: Logger }): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  app.post(STREAM_REGISTRATION_PATH, async (req, reply) => {
    let request: StreamRequest;
    try {
      request = parseStreamRequest(req.body);
    } catch (err) {
      if (err instanceof ContractViolation) return reply.code(400).send({ message: err.message } satisfies ErrorAnswer);
      throw err;
    }
    try {
      const token = options.tokens.issue(request);
      return reply.code(201).send({ url: `${options.baseUrl()}/${request.kind}/${token}` } satisfies StreamRegistered);
    } catch (err) {
      if (err instanceof TooManyTokens) return reply.code(429).send({ message: err.message } satisfies ErrorAnswer);
      throw err;
    }
  });
  await bindPrivateSocket(options.socket, async (path) => {
    await app.listen({ path });
  });
  options.log.debug({ socket: options.socket }, 'internal socket ready');
  return app;
}

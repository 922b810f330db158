import {
  AFTER_ANSWER,
  httpBindingSuite,
  onRedis,
  type ServerSetup,
  type TestServer,
  UNANSWERED,
} from '@hookgate/http-conformance';
import type { FastifyInstance } from 'fastify';
import fastify4 from 'fastify4';
import fastify5 from 'fastify5';
import { hookgate } from '../src/index.js';

/** Either major's factory, as the tests use it (their instances differ only in types). */
type Factory = (options?: { forceCloseConnections?: boolean }) => FastifyInstance;
const majors = [
  ['fastify 4', fastify4 as unknown as Factory],
  ['fastify 5', fastify5 as unknown as Factory],
] as const;

/** Listen on an ephemeral 127.0.0.1 port; closing drops every connection, idle or not. */
async function serve(app: FastifyInstance): Promise<TestServer> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

function server(fastify: Factory) {
  return async ({ options, handle, onError, bodyParser }: ServerSetup): Promise<TestServer> => {
    const app = fastify({ forceCloseConnections: true });
    // An ordinary error handler: it does not check reply.sent.
    app.setErrorHandler((error, _request, reply) => {
      onError(error);
      return reply.code(500).send({ status: 'error' });
    });
    await app.register(async (scope) => {
      await scope.register(hookgate, options);
      // In Fastify no parser runs before the scope's own: the closest equivalent of a body
      // parser in front of hookgate is one the app adds to the webhook scope after it.
      if (bodyParser === 'keep-raw') {
        scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, raw, done) => {
          (req as { rawBody?: Buffer }).rawBody = raw as Buffer;
          try {
            done(null, JSON.parse(raw.toString()));
          } catch (error) {
            done(error as Error, undefined);
          }
        });
      }
      if (bodyParser === 'drop-raw') {
        scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, raw, done) => {
          try {
            done(null, JSON.parse(raw as string));
          } catch (error) {
            done(error as Error, undefined);
          }
        });
      }
      scope.post('/webhook', async (request, reply) => {
        const answer = await handle(request.webhook!);
        if (answer === UNANSWERED) return reply.callNotFound(); // on to Fastify's own 404
        reply.code(answer.status);
        await (answer.body === undefined ? reply.send() : reply.send(answer.body));
        // Fastify logs an error thrown once the reply is sent; no error handler sees it.
        if (answer.afterAnswer === 'throw') throw AFTER_ANSWER;
        return reply;
      });
    });
    return serve(app);
  };
}

// The whole suite (answers, batches, raw body, concurrency, settlement, client disconnects) on
// both majors, on a MemoryStore and on a real Redis of the file's own.
for (const [name, fastify] of majors) {
  httpBindingSuite(name, server(fastify));
  httpBindingSuite(`${name} on ioredis`, server(fastify), { store: onRedis() });
}

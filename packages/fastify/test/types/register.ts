// Type tests for registering the plugin, checked three times: by `tsc -p tsconfig.json` at the
// workspace root (where `fastify` is Fastify 5), and by test/types.test.ts with `fastify`
// mapped to Fastify 4 and to Fastify 5 (test/types/tsconfig.v4.json, tsconfig.v5.json), as a
// project with either major installed sees it.
import { createGate, type Gate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import fastify4 from 'fastify4';
import fastify5 from 'fastify5';
import { expectTypeOf } from 'vitest';
import { hookgate, type Verify, type WebhookRequest } from '../../src/index.js';

const gate = createGate<{ amount: number }>({ store: new MemoryStore() });
const app = fastify();

app.register(async (scope) => {
  await scope.register(hookgate, { gate, verify: false });
  scope.post('/webhooks', async (request, reply) => {
    // `request.webhook` is on every Fastify request, through declaration merging.
    expectTypeOf(request.webhook).toEqualTypeOf<WebhookEvent | undefined>();
    return reply.code(204).send();
  });
  // A handler can take the request with a typed payload.
  scope.post('/typed', async (request, reply) => {
    const { webhook } = request as WebhookRequest<{ amount: number }>;
    expectTypeOf(webhook.payload).toEqualTypeOf<{ amount: number }>();
    return reply.code(204).send();
  });
});

app.register(async (scope) => {
  // verify's arguments are typed from the options.
  await scope.register(hookgate, {
    gate,
    verify: async (raw, headers) => {
      expectTypeOf(raw).toEqualTypeOf<Buffer>();
      return raw.length > 0 && headers['x-signature'] !== undefined;
    },
    inFlight: 'ack',
    limit: 65_536,
    retryAfter: 30,
  });
  // @ts-expect-error verify is required: pass a check, or false to opt out
  await scope.register(hookgate, { gate });
  // @ts-expect-error inFlight is 'retry' or 'ack'
  await scope.register(hookgate, { gate, verify: false, inFlight: 'later' });
  // @ts-expect-error gate must be a Gate
  await scope.register(hookgate, { gate: { claim: 1 } as unknown as Gate | 1, verify: false });
});

// `await register(...)` and the callback style both work.
void app.register(hookgate, { gate, verify: false }).after();

// Both majors side by side in one program (as this workspace has them): the one declaration of
// the plugin registers on either's instances.
void fastify4().register(async (scope) => {
  await scope.register(hookgate, { gate, verify: false });
  // @ts-expect-error verify is required
  await scope.register(hookgate, { gate });
});
void fastify5().register(async (scope) => {
  await scope.register(hookgate, { gate, verify: false });
  // @ts-expect-error verify is required
  await scope.register(hookgate, { gate });
});

expectTypeOf<Parameters<Verify>[0]>().toEqualTypeOf<Buffer>();
expectTypeOf<WebhookRequest>().toMatchTypeOf<FastifyRequest>();

export type { FastifyReply };

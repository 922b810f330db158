// Type tests, checked by `tsc -p tsconfig.json` at the workspace root.
import { createGate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { Hono } from 'hono';
import { expectTypeOf } from 'vitest';
import { hookgate, type Verify, type WebhookVariables } from '../src/index.js';

type Payment = { amount: number };
const gate = createGate<Payment>({ store: new MemoryStore() });

expectTypeOf<Parameters<Verify>>().toEqualTypeOf<[Uint8Array, Headers]>();

// On the route, the middleware's Variables type c.get('webhook') with its payload.
new Hono().post('/webhooks', hookgate({ gate, verify: false }), (c) => {
  expectTypeOf(c.get('webhook')).toEqualTypeOf<WebhookEvent<Payment>>();
  expectTypeOf(c.var.webhook.payload.amount).toEqualTypeOf<number>();
  return c.body(null, 204);
});

// An app typed with the variables, and every context through ContextVariableMap.
new Hono<{ Variables: WebhookVariables<Payment> }>().post('/hooks', (c) => {
  expectTypeOf(c.get('webhook').payload).toEqualTypeOf<Payment>();
  return c.body(null, 204);
});
new Hono().get('/other', (c) => {
  expectTypeOf(c.get('webhook')).toEqualTypeOf<WebhookEvent>();
  return c.text('ok');
});

// @ts-expect-error verify is required: pass a check, or false to opt out
hookgate({ gate });

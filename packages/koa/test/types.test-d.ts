// Type tests, checked by `tsc -p tsconfig.json` at the workspace root.
import { createGate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import { expectTypeOf } from 'vitest';
import { hookgate, type Verify, type WebhookState } from '../src/index.js';

type Payment = { amount: number };
const gate = createGate<Payment>({ store: new MemoryStore() });
const guard = hookgate({ gate, verify: false });

expectTypeOf(guard).toEqualTypeOf<Middleware<WebhookState<Payment>>>();
expectTypeOf<Parameters<Verify>[0]>().toEqualTypeOf<Buffer>();

// An app typed with the state sees ctx.state.webhook with its payload.
const app = new Koa<WebhookState<Payment>>();
app.use(guard);
app.use((ctx) => {
  expectTypeOf(ctx.state.webhook).toEqualTypeOf<WebhookEvent<Payment>>();
  expectTypeOf(ctx.state.webhook.payload.amount).toEqualTypeOf<number>();
});

// So does a route of a router typed with it.
const router = new Router<WebhookState<Payment>>();
router.post('/webhooks', guard, (ctx) => {
  expectTypeOf(ctx.state.webhook.payload).toEqualTypeOf<Payment>();
});

// @ts-expect-error verify is required: pass a check, or false to opt out
hookgate({ gate });

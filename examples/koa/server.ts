/**
 * A webhook receiver on Koa and @koa/router, deduplicated by hookgate, for a Standard
 * Webhooks provider.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=3000 pnpm tsx --conditions=@hookgate/source examples/koa/server.ts
 *
 * POST /webhooks takes deliveries; GET /applied lists the events the handler applied.
 */
import type { AddressInfo } from 'node:net';
import { createGate, providers } from '@hookgate/core';
import { hookgate, type WebhookState } from '@hookgate/koa';
import { MemoryStore } from '@hookgate/memory';
import Router from '@koa/router';
import Koa from 'koa';
import { EXAMPLE_SECRET, standardWebhooks } from '../standard-webhooks.js';

// Refuses a delivery without a valid, recent Standard Webhooks signature.
const verify = standardWebhooks(process.env.WEBHOOK_SECRET ?? EXAMPLE_SECRET);

const gate = createGate<{ type: string }>({
  store: new MemoryStore(),
  provider: providers.standardWebhooks,
  onDecision: (event) => console.log(`decision ${event.decision} ${event.key ?? '-'}`),
});

const applied: string[] = [];
const router = new Router<WebhookState<{ type: string }>>();

// No body parser on this route: hookgate() reads the raw bytes the signature covers.
router.post('/webhooks', hookgate({ gate, verify }), (ctx) => {
  const { webhook } = ctx.state;
  applied.push(`${webhook.key} ${webhook.payload.type}`);
  ctx.body = { status: 'processed' };
});
router.get('/applied', (ctx) => {
  ctx.body = applied;
});

const app = new Koa();
app.use(router.routes()).use(router.allowedMethods());

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`listening on http://127.0.0.1:${port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

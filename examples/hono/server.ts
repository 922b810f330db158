/**
 * A webhook receiver on Hono (here on @hono/node-server), deduplicated by hookgate, for a
 * Standard Webhooks provider.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=3000 pnpm tsx --conditions=@hookgate/source examples/hono/server.ts
 *
 * POST /webhooks takes deliveries; GET /applied lists the events the handler applied.
 */
import { serve } from '@hono/node-server';
import { createGate, providers } from '@hookgate/core';
import { hookgate } from '@hookgate/hono';
import { MemoryStore } from '@hookgate/memory';
import { Hono } from 'hono';
import { EXAMPLE_SECRET, standardWebhooks } from '../standard-webhooks.js';

// Refuses a delivery without a valid, recent Standard Webhooks signature.
const verify = standardWebhooks(process.env.WEBHOOK_SECRET ?? EXAMPLE_SECRET);

const gate = createGate<{ type: string }>({
  store: new MemoryStore(),
  provider: providers.standardWebhooks,
  onDecision: (event) => console.log(`decision ${event.decision} ${event.key ?? '-'}`),
});

const applied: string[] = [];
const app = new Hono();

// No body reader before hookgate(): it reads the raw bytes the signature covers.
app.post('/webhooks', hookgate({ gate, verify }), (c) => {
  const webhook = c.get('webhook');
  applied.push(`${webhook.key} ${webhook.payload.type}`);
  return c.json({ status: 'processed' });
});
app.get('/applied', (c) => c.json(applied));

const server = serve(
  { fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: '127.0.0.1' },
  ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));

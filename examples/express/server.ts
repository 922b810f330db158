/**
 * A webhook receiver on Express, deduplicated by hookgate, for a Standard Webhooks provider.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=3000 pnpm tsx --conditions=@hookgate/source examples/express/server.ts
 *
 * POST /webhooks takes deliveries; GET /applied lists the events the handler applied.
 */
import type { AddressInfo } from 'node:net';
import { createGate, providers } from '@hookgate/core';
import { hookgate, type WebhookRequest } from '@hookgate/express';
import { MemoryStore } from '@hookgate/memory';
import express from 'express';
import { EXAMPLE_SECRET, standardWebhooks } from '../standard-webhooks.js';

// Refuses a delivery without a valid, recent Standard Webhooks signature.
const verify = standardWebhooks(process.env.WEBHOOK_SECRET ?? EXAMPLE_SECRET);

const gate = createGate({
  store: new MemoryStore(),
  provider: providers.standardWebhooks,
  onDecision: (event) => console.log(`decision ${event.decision} ${event.key ?? '-'}`),
});

const applied: string[] = [];
const app = express();

// No body parser on this route: hookgate() reads the raw bytes the signature covers.
app.post('/webhooks', hookgate({ gate, verify }), (req, res) => {
  const { webhook } = req as WebhookRequest<{ type: string }>;
  applied.push(`${webhook.key} ${webhook.payload.type}`);
  res.status(200).json({ status: 'processed' });
});
app.get('/applied', (_req, res) => {
  res.json(applied);
});

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`listening on http://127.0.0.1:${port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

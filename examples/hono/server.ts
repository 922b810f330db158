/**
 * A webhook receiver on Hono (here on @hono/node-server), deduplicated by hookgate, for a
 * Standard Webhooks provider.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=3000 pnpm tsx --conditions=@hookgate/source examples/hono/server.ts
 *
 * POST /webhooks takes deliveries; GET /applied lists the events the handler applied.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { serve } from '@hono/node-server';
import { createGate, providers } from '@hookgate/core';
import { hookgate } from '@hookgate/hono';
import { MemoryStore } from '@hookgate/memory';
import { Hono } from 'hono';

const secret = process.env.WEBHOOK_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
const TOLERANCE_S = 5 * 60;

/** Standard Webhooks: HMAC-SHA256 over `${id}.${timestamp}.${body}`, base64, as `v1,<sig>`. */
function verify(body: Uint8Array, headers: Headers): boolean {
  const id = headers.get('webhook-id');
  const timestamp = headers.get('webhook-timestamp');
  const signatures = headers.get('webhook-signature');
  if (id === null || timestamp === null || signatures === null) return false;
  // A replay of an old, validly signed request is refused (and so is one from the future).
  const sentAt = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - sentAt) > TOLERANCE_S) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  // Several signatures, space-separated, while the provider rotates its secret.
  return signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || signature === undefined) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

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

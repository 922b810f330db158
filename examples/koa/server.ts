/**
 * A webhook receiver on Koa and @koa/router, deduplicated by hookgate, for a Standard
 * Webhooks provider.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=3000 pnpm tsx --conditions=@hookgate/source examples/koa/server.ts
 *
 * POST /webhooks takes deliveries; GET /applied lists the events the handler applied.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGate, providers } from '@hookgate/core';
import { hookgate, type WebhookState } from '@hookgate/koa';
import { MemoryStore } from '@hookgate/memory';
import Router from '@koa/router';
import Koa from 'koa';

const secret = process.env.WEBHOOK_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
const TOLERANCE_S = 5 * 60;

/** Standard Webhooks: HMAC-SHA256 over `${id}.${timestamp}.${body}`, base64, as `v1,<sig>`. */
function verify(body: Buffer, headers: IncomingHttpHeaders): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') {
    return false;
  }
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

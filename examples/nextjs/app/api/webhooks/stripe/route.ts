import { webhookHandler } from '@hookgate/fetch';
import { gate } from '#lib/gate';
import { count, record } from '#lib/runs';
import { verifyStripeSignature } from '#lib/stripe-signature';

// The Node.js runtime: one long-lived server process whose module-level gate (and its
// MemoryStore) serves every request, the runtime the Redis and PostgreSQL stores need (TCP
// clients), and Node's own SHA-256 for digest keys. It is the default; saying it keeps a later
// `runtime = 'edge'` from quietly changing all three.
export const runtime = 'nodejs';
// Never prerendered or cached: every delivery runs this code.
export const dynamic = 'force-dynamic';

export const POST = webhookHandler({ gate, verify: verifyStripeSignature }, async (event) => {
  const attempt = count(record.attempts, event.key);
  // A stand-in for a failing dependency: the first attempt throws. hookgate releases the claim
  // and throws on; Next.js logs the error and answers 500, so Stripe retries, and that retry runs.
  if (event.payload.type === 'test.fail_first_attempt' && attempt === 1) {
    throw new Error(`simulated failure of ${event.key}, attempt ${attempt}`);
  }
  count(record.runs, event.key);
  return Response.json({ received: true, key: event.key }); // 2xx: the event is done
});

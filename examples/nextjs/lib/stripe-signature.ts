import { type Verifier, verifiers } from '@hookgate/core';

let verify: Verifier | undefined;

/**
 * Stripe's `Stripe-Signature` check over the exact body bytes: core's built-in verifier (Web
 * Crypto, a 300 s tolerance, several `v1=` during a secret roll). Built on the first delivery,
 * so the secret is read when the server runs (`next start` gets it from the environment), never
 * baked into the build. Without a secret, every delivery fails verification (401).
 */
export function verifyStripeSignature(rawBody: Uint8Array, headers: Headers): Promise<boolean> {
  const secret = process.env.STRIPE_WEBHOOK_SECRET;
  if (!secret) return Promise.resolve(false);
  verify ??= verifiers.stripe(secret);
  return verify(rawBody, headers);
}

/**
 * Standard Webhooks signature verification, shared by the example servers
 * (`express/`, `koa/`, `hono/`): each passes the function {@link standardWebhooks} returns to
 * its binding as `hookgate({ gate, verify })`.
 *
 * Spec: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The secret the examples use when `WEBHOOK_SECRET` is not set: for local runs only. */
export const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** How old (or how far in the future) a signed timestamp may be, in seconds. */
const TOLERANCE_S = 5 * 60;

/**
 * A `verify` for a hookgate binding: HMAC-SHA256 with the `whsec_` secret over
 * `${id}.${timestamp}.${body}`, base64, as `v1,<sig>`. Takes Node's headers (Express, Koa) or
 * Fetch `Headers` (Hono).
 */
export function standardWebhooks(secret: string) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return function verify(body: Uint8Array, headers: IncomingHttpHeaders | Headers): boolean {
    const header = (name: string) =>
      headers instanceof Headers ? headers.get(name) : headers[name];
    const id = header('webhook-id');
    const timestamp = header('webhook-timestamp');
    const signatures = header('webhook-signature');
    if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') {
      return false;
    }
    // A replay of an old, validly signed request is refused (and so is one from the future).
    const sentAt = Number(timestamp);
    if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - sentAt) > TOLERANCE_S) {
      return false;
    }
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
    // Several signatures, space-separated, while the provider rotates its secret.
    return signatures.split(' ').some((entry) => {
      const [version, signature] = entry.split(',');
      if (version !== 'v1' || signature === undefined) return false;
      const given = Buffer.from(signature, 'base64');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  };
}

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createGate, type Gate } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import type { Provider } from '@nestjs/common';
import type { PaymentEvent } from './webhooks.service.js';

/** The injection token of the app's gate. */
export const GATE = Symbol('hookgate gate');

/** One gate for the app: a MemoryStore here; a RedisStore or PostgresStore across instances. */
export const gateProvider: Provider = {
  provide: GATE,
  useFactory: (): Gate<PaymentEvent> =>
    createGate<PaymentEvent>({ store: new MemoryStore(), eventId: 'id' }),
};

export const SECRET = process.env.WEBHOOK_SECRET ?? 'whsec_example';

/** HMAC-SHA256 of the exact body, hex, in `x-signature` (use your provider's verifier). */
export function sign(body: string | Uint8Array): string {
  return createHmac('sha256', SECRET).update(body).digest('hex');
}

export function verify(rawBody: Buffer, headers: IncomingHttpHeaders): boolean {
  const given = Buffer.from(String(headers['x-signature'] ?? ''));
  const expected = Buffer.from(sign(rawBody));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Hono middleware for hookgate: verify, claim, hand on, settle from the outcome. Web-standard
 * only, so it runs on `@hono/node-server` and on every runtime Hono runs on.
 *
 * @packageDocumentation
 */
import {
  type Claim,
  type Gate,
  HookgateError,
  InvalidDeliveryError,
  StoreUnavailableError,
  type WebhookEvent,
} from '@hookgate/core';
import type { Context, MiddlewareHandler } from 'hono';

declare module 'hono' {
  interface ContextVariableMap {
    /** The webhook event, set by `hookgate()` on the routes it guards. */
    webhook: WebhookEvent;
  }
}

/** The variables `hookgate()` sets: `c.get('webhook')`, the event with a typed payload. */
export interface WebhookVariables<TPayload = unknown> {
  webhook: WebhookEvent<TPayload>;
}

/**
 * Checks a delivery's signature over the exact body bytes. Resolve `true` to accept; `false`
 * (or a throw) answers 401 and claims nothing.
 */
export type Verify = (rawBody: Uint8Array, headers: Headers) => boolean | Promise<boolean>;

/** Options of {@link hookgate}. */
export interface HookgateOptions<TPayload = unknown> {
  /** The gate that claims each delivery. */
  gate: Gate<TPayload>;
  /**
   * Verifies the signature before anything is claimed: never dedupe an unauthenticated body.
   * Required; `false` is an explicit opt-out (for a route that is authenticated otherwise).
   */
  verify: Verify | false;
  /**
   * A delivery whose event is being handled elsewhere right now: `'retry'` answers 409 with
   * `Retry-After`, so the provider comes back once the first attempt settled; `'ack'` answers
   * 200 (the event is lost if that first attempt then fails).
   * @default 'retry'
   */
  inFlight?: 'retry' | 'ack';
  /** The largest body accepted, in bytes; a larger one answers 413. @default 1_048_576 (1 MiB) */
  limit?: number;
  /** The `Retry-After` of a 409 (in flight) or 503 (store unavailable), in seconds. @default 10 */
  retryAfter?: number;
}

/**
 * Middleware for a webhook route. It reads the raw body, runs `verify`, claims the delivery
 * and answers duplicates (200), stale events (200), deliveries in flight (409), invalid ones
 * (400) and store failures (503) itself. A new event goes on to the handler as
 * `c.get('webhook')`; once it settles, the claim is marked done when the response is 2xx,
 * released otherwise (a thrown error is Hono's to handle, through `app.onError`).
 *
 * @example
 * app.post('/webhooks', hookgate({ gate, verify }), (c) => { ...; return c.body(null, 204); });
 */
export function hookgate<TPayload = unknown>(
  options: HookgateOptions<TPayload>,
): MiddlewareHandler<{ Variables: WebhookVariables<TPayload> }> {
  const { gate, verify, inFlight = 'retry', limit = 1_048_576, retryAfter = 10 } = options ?? {};
  checkOptions(gate, verify, inFlight, limit, retryAfter);
  const later = { 'Retry-After': String(retryAfter) };

  return async function hookgateMiddleware(c, next) {
    const body = await rawBodyOf(c, limit);
    if (body === undefined) return c.json({ status: 'too-large' }, 413);
    const headers = c.req.raw.headers;
    if (verify !== false && !(await verified(verify, body, headers))) {
      return c.json({ status: 'unauthorized' }, 401);
    }
    let claim: Claim<TPayload>;
    try {
      claim = await gate.claim({ rawBody: body, headers });
    } catch (error) {
      if (error instanceof InvalidDeliveryError) {
        return c.json({ status: 'invalid', reason: error.reason }, 400);
      }
      if (error instanceof StoreUnavailableError) {
        return c.json({ status: 'unavailable' }, 503, later);
      }
      throw error;
    }
    if (claim.status === 'in-flight' && inFlight === 'retry') {
      return c.json({ status: 'in-flight' }, 409, later);
    }
    if (!claim.acquired) return c.json({ status: claim.status }, 200);
    c.set('webhook', claim.event);
    try {
      await next();
    } catch (error) {
      // Only without app-level error handling; Hono normally catches and sets c.error.
      await settled(claim.fail(error));
      throw error;
    }
    const failure =
      c.error ?? (c.res.ok ? undefined : new Error(`handler answered ${c.res.status}`));
    await settled(failure === undefined ? claim.done() : claim.fail(failure));
  };
}

/** A lost lease or a store failure at settlement is already reported through onDecision. */
function settled(settlement: Promise<void>): Promise<void> {
  return settlement.catch(() => {});
}

async function verified(verify: Verify, body: Uint8Array, headers: Headers) {
  try {
    return (await verify(body, headers)) === true;
  } catch {
    return false;
  }
}

const GONE =
  'hookgate/hono: the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() first, or read the body through c.req (c.req.json(), c.req.text()), which keeps them';

/** The exact body bytes, or `undefined` when over `limit`. */
async function rawBodyOf(c: Context, limit: number): Promise<Uint8Array | undefined> {
  // HonoRequest caches what was read; its own readers (json, text) keep the text.
  const cache = c.req.bodyCache as Record<string, Promise<unknown> | undefined>;
  let bytes: Uint8Array | undefined;
  if (cache.arrayBuffer) bytes = new Uint8Array((await cache.arrayBuffer) as ArrayBuffer);
  else if (cache.text) bytes = new TextEncoder().encode((await cache.text) as string);
  if (bytes !== undefined) return bytes.byteLength > limit ? undefined : bytes;
  const raw = c.req.raw;
  if (raw.bodyUsed || Object.keys(cache).length > 0)
    throw new HookgateError('INVALID_OPTIONS', GONE);
  if (Number(raw.headers.get('content-length')) > limit) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (raw.body !== null) {
    const reader = raw.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size > limit) {
        await reader.cancel();
        return undefined;
      }
      chunks.push(read.value);
    }
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  // Let the handler read the body again through c.req.json() / text().
  cache.arrayBuffer = Promise.resolve(body.buffer);
  return body;
}

function checkOptions(
  gate: unknown,
  verify: unknown,
  inFlight: unknown,
  limit: number,
  retryAfter: number,
): void {
  const fail = (option: string, why: string): never => {
    throw new HookgateError('INVALID_OPTIONS', `hookgate/hono: option \`${option}\` ${why}`);
  };
  if (typeof (gate as Gate | undefined)?.claim !== 'function') fail('gate', 'must be a Gate');
  if (verify !== false && typeof verify !== 'function') {
    fail('verify', 'is required: a signature check, or `false` to opt out explicitly');
  }
  if (inFlight !== 'retry' && inFlight !== 'ack') fail('inFlight', "must be 'retry' or 'ack'");
  if (!Number.isSafeInteger(limit) || limit <= 0) fail('limit', 'must be a positive integer');
  if (!Number.isSafeInteger(retryAfter) || retryAfter < 0) {
    fail('retryAfter', 'must be a non-negative integer of seconds');
  }
}

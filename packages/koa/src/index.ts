/**
 * Koa middleware for hookgate: verify, claim, hand on, settle from the outcome.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  type Claim,
  type Gate,
  HookgateError,
  InvalidDeliveryError,
  StoreUnavailableError,
  type WebhookEvent,
} from '@hookgate/core';
import type { Context, Middleware } from 'koa';

/** The state `hookgate()` adds: `ctx.state.webhook`, the event with a typed payload. */
export interface WebhookState<TPayload = unknown> {
  webhook: WebhookEvent<TPayload>;
}

/**
 * Checks a delivery's signature over the exact body bytes. Resolve `true` to accept; `false`
 * (or a throw) answers 401 and claims nothing.
 */
export type Verify = (rawBody: Buffer, headers: IncomingHttpHeaders) => boolean | Promise<boolean>;

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
 * Middleware for a webhook route (Koa 2 and 3, `@koa/router`). It reads the raw body, runs
 * `verify`, claims the delivery and answers duplicates (200), stale events (200), deliveries in
 * flight (409), invalid ones (400) and store failures (503) itself. A new event goes on to the
 * next middleware as `ctx.state.webhook`; once that settles, the claim is marked done when the
 * status is 2xx, released otherwise, and a thrown error goes on to Koa's error handling.
 *
 * @example
 * router.post('/webhooks', hookgate({ gate, verify }), (ctx) => { ...; ctx.status = 204; });
 */
export function hookgate<TPayload = unknown>(
  options: HookgateOptions<TPayload>,
): Middleware<WebhookState<TPayload>> {
  const { gate, verify, inFlight = 'retry', limit = 1_048_576, retryAfter = 10 } = options ?? {};
  checkOptions(gate, verify, inFlight, limit, retryAfter);

  return async function hookgateMiddleware(ctx, next) {
    const body = await rawBodyOf(ctx, limit);
    if (body === null) return; // the client went away while sending
    if (body === undefined) return reply(ctx, 413, 'too-large', { Connection: 'close' });
    if (verify !== false && !(await verified(verify, body, ctx.headers))) {
      return reply(ctx, 401, 'unauthorized');
    }
    let claim: Claim<TPayload>;
    try {
      claim = await gate.claim({ rawBody: body, headers: ctx.headers });
    } catch (error) {
      if (error instanceof InvalidDeliveryError) {
        return reply(ctx, 400, 'invalid', {}, { reason: error.reason });
      }
      if (error instanceof StoreUnavailableError) {
        return reply(ctx, 503, 'unavailable', { 'Retry-After': String(retryAfter) });
      }
      throw error;
    }
    if (claim.status === 'in-flight' && inFlight === 'retry') {
      return reply(ctx, 409, 'in-flight', { 'Retry-After': String(retryAfter) });
    }
    if (!claim.acquired) return reply(ctx, 200, claim.status);
    ctx.state.webhook = claim.event;
    try {
      await next();
    } catch (error) {
      await settled(claim.fail(error));
      throw error;
    }
    const ok = ctx.status >= 200 && ctx.status < 300;
    await settled(ok ? claim.done() : claim.fail(new Error(`handler answered ${ctx.status}`)));
  };
}

function reply(
  ctx: Context,
  status: number,
  outcome: string,
  headers: Record<string, string> = {},
  extra: object = {},
): void {
  ctx.status = status;
  ctx.set(headers);
  ctx.body = { status: outcome, ...extra };
}

/** A lost lease or a store failure at settlement is already reported through onDecision. */
function settled(settlement: Promise<void>): Promise<void> {
  return settlement.catch(() => {});
}

async function verified(verify: Verify, body: Buffer, headers: IncomingHttpHeaders) {
  try {
    return (await verify(body, headers)) === true;
  } catch {
    return false;
  }
}

const GONE =
  'hookgate/koa: the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before any body parser, or use one that keeps them as ctx.request.rawBody (@koa/bodyparser)';

/** The exact body bytes; `undefined` when over `limit`, `null` when the client went away. */
async function rawBodyOf(ctx: Context, limit: number): Promise<Buffer | undefined | null> {
  // @koa/bodyparser (and koa-bodyparser) keep the body text as ctx.request.rawBody.
  const kept = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof kept === 'string') {
    const bytes = Buffer.from(kept);
    return bytes.length > limit ? undefined : bytes;
  }
  const req = ctx.req;
  // A parser may have set ctx.request.body without reading (a type it skips): only bytes read count.
  if (req.readableDidRead || req.readableEnded) throw new HookgateError('INVALID_OPTIONS', GONE);
  if (Number(req.headers['content-length']) > limit) return undefined;
  return readBody(req, limit);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (settle: () => void) => {
      req.off('data', onData).off('end', onEnd).off('error', reject).off('close', onClose);
      settle();
    };
    // Past the limit, nobody listens any more: the stream keeps flowing and the rest is dropped.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(() => resolve(undefined));
      else chunks.push(chunk);
    };
    const onEnd = () => finish(() => resolve(Buffer.concat(chunks, size)));
    const onClose = () => finish(() => resolve(null));
    req.on('data', onData).on('end', onEnd).on('error', reject).on('close', onClose);
  });
}

function checkOptions(
  gate: unknown,
  verify: unknown,
  inFlight: unknown,
  limit: number,
  retryAfter: number,
): void {
  const fail = (option: string, why: string): never => {
    throw new HookgateError('INVALID_OPTIONS', `hookgate/koa: option \`${option}\` ${why}`);
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

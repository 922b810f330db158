/**
 * Koa middleware for hookgate: verify, claim, hand on, settle from the outcome.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  admit,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type Verify as CoreVerify,
  type Gate,
  type WebhookEvent,
} from '@hookgate/core';
import { type BodyRead, readBody, settleOnWire } from '@hookgate/core/node';
import type { Context, Middleware } from 'koa';

/** The state `hookgate()` adds: `ctx.state.webhook`, the event with a typed payload. */
export interface WebhookState<TPayload = unknown> {
  /** The webhook event: key, source, parsed payload, subject and event time when known. */
  webhook: WebhookEvent<TPayload>;
}

/** Checks a delivery's signature over the exact body bytes; `true` accepts. */
export type Verify = CoreVerify<Buffer, IncomingHttpHeaders>;

/** Options of {@link hookgate}: see {@link BindingOptions} for each field and its default. */
export type HookgateOptions<TPayload = unknown> = BindingOptions<
  TPayload,
  Buffer,
  IncomingHttpHeaders
>;

/**
 * Middleware for a webhook route (Koa 2 and 3, `@koa/router`). It reads the raw body, runs
 * `verify`, claims the delivery and answers an unverified delivery (401), a body over
 * `limit` (413) or cut off (400), an invalid one (400), duplicates and stale events (200),
 * deliveries in flight (409, or 200 with `inFlight: 'ack'`), payload conflicts (422) and store
 * failures (503) itself. A new event goes on to the next middleware as `ctx.state.webhook`; the
 * claim is settled on the status the response puts on the wire: done on a 2xx, failed otherwise
 * (released, or retained per `onFailure`); a thrown error goes on to Koa's error handling, whose
 * answer (500, or an HTTP error's own status) fails it, unless the handler had already written
 * its answer.
 *
 * @example
 * router.post('/webhooks', hookgate({ gate, verify }), (ctx) => { ...; ctx.status = 204; });
 */
export function hookgate<TPayload = unknown>(
  options: HookgateOptions<TPayload>,
): Middleware<WebhookState<TPayload>> {
  const resolved = bindingOptions('hookgate/koa', options);

  return async function hookgateMiddleware(ctx, next) {
    const body = await rawBodyOf(ctx, resolved);
    const { answer, claim } = await admit(resolved, body, ctx.headers);
    if (answer !== undefined) {
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
      return;
    }
    ctx.state.webhook = claim.event;
    // Koa's `await next()` says when the app is done: a response that ended before it (a
    // deadline middleware's 503) settles the claim only then, so a retry meets it in flight.
    const wire = settleOnWire(ctx.res, claim, true);
    try {
      await next();
    } catch (error) {
      wire.appDone(500, error);
      throw error;
    }
    wire.appDone(ctx.status);
  };
}

const GONE =
  'the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before any body parser, or use one that keeps them as ctx.request.rawBody (@koa/bodyparser)';

/** The exact body bytes, from a parser that kept them or from the request itself. */
async function rawBodyOf(
  ctx: Context,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): Promise<BodyRead> {
  // @koa/bodyparser (and koa-bodyparser) keep the body text as ctx.request.rawBody.
  const kept = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof kept === 'string') {
    const bytes = Buffer.from(kept);
    return bytes.length > limit ? 'too-large' : bytes;
  }
  const req = ctx.req;
  // A parser may have set ctx.request.body without reading (a type it skips): only bytes read count.
  if (req.readableDidRead || req.readableEnded) throw bodyConsumed(gate, '@hookgate/koa', GONE);
  return readBody(req, limit);
}

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
  type Verify as CoreVerify,
  HookgateError,
  readBody,
  settle,
  TOO_LARGE,
  type WebhookEvent,
} from '@hookgate/core';
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
  const resolved = bindingOptions('hookgate/koa', options);

  return async function hookgateMiddleware(ctx, next) {
    const body = await rawBodyOf(ctx, resolved.limit);
    if (body === null) return; // the client went away while sending
    const { answer, claim } =
      body === undefined ? { answer: TOO_LARGE } : await admit(resolved, body, ctx.headers);
    if (answer !== undefined) {
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
      return;
    }
    ctx.state.webhook = claim.event;
    try {
      await next();
    } catch (error) {
      await settle(claim, 500, error);
      throw error;
    }
    await settle(claim, ctx.status);
  };
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

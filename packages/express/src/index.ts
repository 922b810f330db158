/**
 * Express middleware for hookgate: verify, claim, hand on, settle from the response.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
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
import type { NextFunction, Request, RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The webhook event, set by `hookgate()` on the routes it guards. */
      webhook?: WebhookEvent;
    }
  }
}

/** A request on a route guarded by `hookgate()`: `req.webhook` is set, with a typed payload. */
export type WebhookRequest<TPayload = unknown> = Request & {
  /** The webhook event: key, source, parsed payload, subject and event time when known. */
  webhook: WebhookEvent<TPayload>;
};

/** Checks a delivery's signature over the exact body bytes; `true` accepts. */
export type Verify = CoreVerify<Buffer, IncomingHttpHeaders>;

/** Options of {@link hookgate}: see {@link BindingOptions} for each field and its default. */
export type HookgateOptions<TPayload = unknown> = BindingOptions<
  TPayload,
  Buffer,
  IncomingHttpHeaders
>;

/**
 * A JSON body parser `verify` callback that keeps the exact bytes as `req.rawBody`, for when a
 * parser must run before `hookgate()`: `app.use(express.json({ verify: keepRawBody }))`.
 */
export function keepRawBody(req: IncomingMessage, _res: ServerResponse, buf: Buffer): void {
  (req as { rawBody?: unknown }).rawBody = buf;
}

/**
 * Middleware for a webhook route. It reads the raw body, runs `verify`, claims the delivery and
 * answers duplicates (200), stale events (200), deliveries in flight (409), invalid ones (400) and
 * store failures (503) itself. A new event goes on to the next handler as `req.webhook`; the claim
 * is settled on the status the response puts on the wire: done on a 2xx, failed otherwise
 * (released, or retained per `onFailure`); a status an error handler sets after the answer left
 * changes nothing.
 *
 * @example
 * app.post('/webhooks', hookgate({ gate, verify }), (req, res) => { ...; res.sendStatus(204); });
 */
export function hookgate<TPayload = unknown>(options: HookgateOptions<TPayload>): RequestHandler {
  const resolved = bindingOptions('hookgate/express', options);

  async function handle(req: Request, res: Response, next: NextFunction): Promise<void> {
    const body = await rawBodyOf(req, resolved);
    const { answer, claim } = await admit(resolved, body, req.headers);
    if (answer !== undefined) {
      res.status(answer.status).set(answer.headers).json(answer.body);
      return;
    }
    req.webhook = claim.event;
    settleOnWire(res, claim);
    next();
  }

  return function hookgateMiddleware(req, res, next) {
    // Express 4 ignores a rejected promise: route every error to next() ourselves.
    handle(req, res, next).catch(next);
  };
}

const GONE =
  'the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before any body parser, or keep the bytes: express.json({ verify: keepRawBody }) or express.raw()';

/** The exact body bytes, from a parser that kept them or from the request itself. */
async function rawBodyOf(
  req: Request,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): Promise<BodyRead> {
  const kept = (req as { rawBody?: unknown }).rawBody ?? req.body;
  if (Buffer.isBuffer(kept) || typeof kept === 'string') {
    const bytes = Buffer.isBuffer(kept) ? kept : Buffer.from(kept);
    return bytes.length > limit ? 'too-large' : bytes;
  }
  if (req.readableDidRead || req.readableEnded || (req as { _body?: boolean })._body === true) {
    throw bodyConsumed(gate, '@hookgate/express', GONE);
  }
  return readBody(req, limit);
}

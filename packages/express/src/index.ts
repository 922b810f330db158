/**
 * Express middleware for hookgate: verify, claim, hand on, settle from the response.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  type Admission,
  admit,
  answerOf,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type Verify as CoreVerify,
  type Gate,
  type WebhookEvent,
} from '@hookgate/core';
import { type BodyRead, readBodyThen, settleOnWire } from '@hookgate/core/node';
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
 * answers an unverified delivery (401), a body over `limit` (413) or cut off (400), an
 * invalid one (400), duplicates and stale events (200), deliveries in flight (409, or 200 with
 * `inFlight: 'ack'`), payload conflicts (422) and store failures (503) itself. A new event goes on
 * to the next handler as `req.webhook`; the claim is settled on the status the response puts on
 * the wire: done on a 2xx, failed otherwise (released, or retained per `onFailure`); a status an
 * error handler sets after the answer left changes nothing.
 *
 * @example
 * app.post('/webhooks', hookgate({ gate, verify }), (req, res) => { ...; res.sendStatus(204); });
 */
export function hookgate<TPayload = unknown>(options: HookgateOptions<TPayload>): RequestHandler {
  const resolved = bindingOptions('hookgate/express', options);

  /** The admission's answer, or the next handler's turn with `req.webhook` set. */
  function enter(
    req: Request,
    res: Response,
    next: NextFunction,
    { answer, claim }: Admission<unknown>,
  ): void {
    if (answer !== undefined) {
      res.status(answer.status).set(answer.headers).json(answer.body);
      return;
    }
    req.webhook = claim.event;
    settleOnWire(res, claim);
    next();
  }

  function admitBody(req: Request, res: Response, next: NextFunction, body: BodyRead): void {
    const admitting = admit(resolved, body, req.headers);
    // Read at once when verify and the store answered without waiting (see `answerOf`).
    const admission = answerOf(admitting);
    if (admission !== undefined) enter(req, res, next, admission);
    // Express 4 ignores a rejected promise: route every error to next() ourselves.
    else admitting.then((later) => enter(req, res, next, later)).catch(next);
  }

  // Callbacks, not an async function: a body read and an admission answered at once reach the
  // next handler with no promise of ours.
  return function hookgateMiddleware(req, res, next) {
    try {
      const kept = keptBodyOf(req, resolved);
      if (kept !== undefined) admitBody(req, res, next, kept);
      else {
        readBodyThen(req, resolved.limit, (body) => {
          try {
            admitBody(req, res, next, body);
          } catch (error) {
            next(error);
          }
        });
      }
    } catch (error) {
      next(error);
    }
  };
}

const GONE =
  'the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before any body parser, or keep the bytes: express.json({ verify: keepRawBody }) or express.raw()';

/**
 * The exact body bytes a parser kept, or `undefined` when none ran (the request has them).
 *
 * The request's stream is asked first, since a request that nobody read (the usual case) needs
 * nothing else: each property asked of an Express request costs a lookup of its own (Express
 * gives each request its app's prototype, and V8 a new hidden class with it). So a request
 * that carries bytes in `rawBody` or `body` but whose stream nobody read is read from its
 * stream.
 */
function keptBodyOf(
  req: Request,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): BodyRead | undefined {
  if (!req.readableDidRead && !req.readableEnded && (req as { _body?: boolean })._body !== true) {
    return undefined; // not read yet: read it
  }
  const kept = (req as { rawBody?: unknown }).rawBody ?? req.body;
  if (Buffer.isBuffer(kept) || typeof kept === 'string') {
    const bytes = Buffer.isBuffer(kept) ? kept : Buffer.from(kept);
    return bytes.length > limit ? 'too-large' : bytes;
  }
  throw bodyConsumed(gate, '@hookgate/express', GONE);
}

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
  type Claim,
  type Verify as CoreVerify,
  HookgateError,
  readBody,
  settle,
  TOO_LARGE,
  type WebhookEvent,
} from '@hookgate/core';
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
 * Middleware for a webhook route. It reads the raw body, runs `verify`, claims the delivery
 * and answers duplicates (200), stale events (200), deliveries in flight (409), invalid ones
 * (400) and store failures (503) itself. A new event goes on to the next handler as
 * `req.webhook`; the claim is marked done when the response is 2xx, released otherwise.
 *
 * @example
 * app.post('/webhooks', hookgate({ gate, verify }), (req, res) => { ...; res.sendStatus(204); });
 */
export function hookgate<TPayload = unknown>(options: HookgateOptions<TPayload>): RequestHandler {
  const resolved = bindingOptions('hookgate/express', options);

  async function handle(req: Request, res: Response, next: NextFunction): Promise<void> {
    const body = await rawBodyOf(req, resolved.limit);
    if (body === null) return; // the client went away while sending
    const { answer, claim } =
      body === undefined ? { answer: TOO_LARGE } : await admit(resolved, body, req.headers);
    if (answer !== undefined) {
      res.status(answer.status).set(answer.headers).json(answer.body);
      return;
    }
    req.webhook = claim.event;
    settleOnResponse(res, claim);
    next();
  }

  return function hookgateMiddleware(req, res, next) {
    // Express 4 ignores a rejected promise: route every error to next() ourselves.
    handle(req, res, next).catch(next);
  };
}

/**
 * Settle once the handler has answered. A client that disconnects first emits 'close' before
 * the handler ends the response; a handler that ends it later still emits 'prefinish', so the
 * claim is settled then rather than left to expire.
 */
function settleOnResponse(res: Response, claim: Claim): void {
  let settled = false;
  const once = () => {
    if (settled) return;
    settled = true;
    void settle(claim, res.statusCode);
  };
  res.once('finish', once);
  res.once('close', () => {
    if (res.writableEnded) once();
    else res.once('prefinish', once);
  });
}

const GONE =
  'hookgate/express: the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before any body parser, or keep the bytes: express.json({ verify: keepRawBody }) or express.raw()';

/** The exact body bytes; `undefined` when over `limit`, `null` when the client went away. */
async function rawBodyOf(req: Request, limit: number): Promise<Buffer | undefined | null> {
  const kept = (req as { rawBody?: unknown }).rawBody ?? req.body;
  if (Buffer.isBuffer(kept) || typeof kept === 'string') {
    const bytes = Buffer.isBuffer(kept) ? kept : Buffer.from(kept);
    return bytes.length > limit ? undefined : bytes;
  }
  if (req.readableDidRead || req.readableEnded || (req as { _body?: boolean })._body === true) {
    throw new HookgateError('INVALID_OPTIONS', GONE);
  }
  if (Number(req.headers['content-length']) > limit) return undefined;
  return readBody(req, limit);
}

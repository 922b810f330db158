/**
 * Express middleware for hookgate: verify, claim, hand on, settle from the response.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  type Claim,
  type Gate,
  HookgateError,
  InvalidDeliveryError,
  StoreUnavailableError,
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
export type WebhookRequest<TPayload = unknown> = Request & { webhook: WebhookEvent<TPayload> };

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
  const { gate, verify, inFlight = 'retry', limit = 1_048_576, retryAfter = 10 } = options ?? {};
  checkOptions(gate, verify, inFlight, limit, retryAfter);

  async function handle(req: Request, res: Response, next: NextFunction): Promise<void> {
    const body = await rawBodyOf(req, limit);
    if (body === null) return; // the client went away while sending
    if (body === undefined) {
      res.status(413).set('Connection', 'close').json({ status: 'too-large' });
      return;
    }
    if (verify !== false && !(await verified(verify, body, req.headers))) {
      res.status(401).json({ status: 'unauthorized' });
      return;
    }
    let claim: Claim<TPayload>;
    try {
      claim = await gate.claim({ rawBody: body, headers: req.headers });
    } catch (error) {
      if (error instanceof InvalidDeliveryError) {
        res.status(400).json({ status: 'invalid', reason: error.reason });
      } else if (error instanceof StoreUnavailableError) {
        res.status(503).set('Retry-After', String(retryAfter)).json({ status: 'unavailable' });
      } else throw error;
      return;
    }
    if (claim.status === 'in-flight' && inFlight === 'retry') {
      res.status(409).set('Retry-After', String(retryAfter)).json({ status: 'in-flight' });
    } else if (!claim.acquired) {
      res.status(200).json({ status: claim.status });
    } else {
      req.webhook = claim.event;
      settleOnResponse(res, claim);
      next();
    }
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
  const settle = () => {
    if (settled) return;
    settled = true;
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    // A lost lease or a store failure here is already reported through the gate's onDecision.
    (ok ? claim.done() : claim.fail(new Error(`handler answered ${res.statusCode}`))).catch(
      () => {},
    );
  };
  res.once('finish', settle);
  res.once('close', () => {
    if (res.writableEnded) settle();
    else res.once('prefinish', settle);
  });
}

async function verified(verify: Verify, body: Buffer, headers: IncomingHttpHeaders) {
  try {
    return (await verify(body, headers)) === true;
  } catch {
    return false;
  }
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
    throw new HookgateError('INVALID_OPTIONS', `hookgate/express: option \`${option}\` ${why}`);
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

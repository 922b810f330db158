/**
 * Hono middleware for hookgate: verify, claim, hand on, settle from the outcome. Web-standard
 * only, so it runs on `@hono/node-server` and on every runtime Hono runs on.
 *
 * @packageDocumentation
 */
import {
  admit,
  answerOf,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type Verify as CoreVerify,
  type Gate,
  settleFromResponse,
  type WebhookEvent,
} from '@hookgate/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

declare module 'hono' {
  interface ContextVariableMap {
    /** The webhook event, set by `hookgate()` on the routes it guards. */
    webhook: WebhookEvent;
  }
}

/** The Hono environment `hookgate()` adds to a route. */
export interface WebhookEnv<TPayload = unknown> {
  /** `c.get('webhook')`. */
  Variables: WebhookVariables<TPayload>;
}

/** The variables `hookgate()` sets: `c.get('webhook')`, the event with a typed payload. */
export interface WebhookVariables<TPayload = unknown> {
  /** The webhook event: key, source, parsed payload, subject and event time when known. */
  webhook: WebhookEvent<TPayload>;
}

/** Checks a delivery's signature over the exact body bytes; `true` accepts. */
export type Verify = CoreVerify<Uint8Array, Headers>;

/** Options of {@link hookgate}: see {@link BindingOptions} for each field and its default. */
export type HookgateOptions<TPayload = unknown> = BindingOptions<TPayload, Uint8Array, Headers>;

/**
 * Middleware for a webhook route. It reads the raw body, runs `verify`, claims the delivery and
 * answers an unverified delivery (401), a body over `limit` (413) or cut off (400), an
 * invalid one (400), duplicates and stale events (200), deliveries in flight (409, or 200 with
 * `inFlight: 'ack'`), payload conflicts (422) and store failures (503) itself. A new event goes on
 * to the handler as `c.get('webhook')`; once it settles, the claim is settled on the response the
 * route ends with: done on a 2xx, failed otherwise (released, or retained per `onFailure`) — a
 * thrown error (Hono's to handle, through `app.onError`) and a handler that returns no Response
 * both end in a non-2xx.
 *
 * @example
 * app.post('/webhooks', hookgate({ gate, verify }), (c) => { ...; return c.body(null, 204); });
 */
export function hookgate<TPayload = unknown>(
  options: HookgateOptions<TPayload>,
): MiddlewareHandler<WebhookEnv<TPayload>> {
  const resolved = bindingOptions('hookgate/hono', options);

  return async function hookgateMiddleware(c, next) {
    const body = await rawBodyOf(c, resolved);
    const admitting = admit(resolved, body, c.req.raw.headers);
    // Read at once when verify and the store answered without waiting (see `answerOf`).
    const { answer, claim } = answerOf(admitting) ?? (await admitting);
    if (answer !== undefined) {
      return c.json(answer.body, answer.status as ContentfulStatusCode, answer.headers);
    }
    c.set('webhook', claim.event);
    try {
      await next();
    } catch (error) {
      // Only without app-level error handling; Hono normally catches and sets c.error.
      await settleFromResponse(claim, 500, error);
      throw error;
    }
    // A handler that returned no Response leaves the context unfinalized: Hono answers 500.
    await settleFromResponse(claim, c.finalized ? c.res.status : 500, c.error);
  };
}

// Thrown only when no bytes are left; whether Hono's readers keep them depends on its version.
const GONE =
  'the request body was consumed before hookgate() could read its raw bytes. ' +
  'Mount hookgate() before anything that reads the body';

/**
 * The exact body bytes, or why there are none. Only Hono's public API: `c.req.raw`, and
 * `c.req.arrayBuffer()`, which reads through Hono's body cache. One promise to wait for on the
 * usual path (a `Content-Length`), not a chain of async functions.
 */
function rawBodyOf(
  c: Context,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): Promise<Body> {
  const raw = c.req.raw;
  if (raw.bodyUsed) {
    // Read before us. Through Hono's own readers, c.req.arrayBuffer() rebuilds the bytes from
    // what they cached: the text from Hono 4.8.4 (c.req.text() from 4.2.0), so the exact bytes
    // of a UTF-8 body; before, c.req.json() cached the parsed object, re-serialised here (a
    // signature over it fails). Through the Request itself, or before 4.2.0: gone.
    return c.req.arrayBuffer().then(
      (buffer) => limited(buffer, limit),
      () => {
        throw bodyConsumed(gate, '@hookgate/hono', GONE);
      },
    );
  }
  const length = raw.headers.get('content-length');
  if (length === null) return readChunked(raw, limit).catch(aborted);
  if (Number(length) > limit) return Promise.resolve('too-large');
  // The HTTP parser delivers exactly Content-Length bytes, so the limit holds without counting
  // chunks. c.req.arrayBuffer() takes the runtime's direct path (@hono/node-server reads the
  // IncomingMessage, where body.getReader() builds a web stream over it: half the rate) and
  // keeps the bytes in Hono's body cache for the handler's c.req.json() / text().
  return c.req.arrayBuffer().then((buffer) => limited(buffer, limit), aborted);
}

/** The body's bytes, or why there are none: over the limit, or the client gone mid-body. */
type Body = Uint8Array | 'too-large' | 'aborted';

const limited = (buffer: ArrayBuffer, limit: number): Body =>
  buffer.byteLength > limit ? 'too-large' : new Uint8Array(buffer);

/** The client went away (or the connection failed) before the body ended. */
const aborted = (): Body => 'aborted';

/**
 * A chunked body: count the bytes as they come and stop at the limit. They are read from a
 * clone, so that the request keeps its body for the handler's c.req.json() / text().
 */
async function readChunked(raw: Request, limit: number): Promise<Uint8Array | 'too-large'> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const copy = raw.clone();
  if (copy.body !== null) {
    const reader = copy.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size > limit) {
        // Both branches of the clone: only then does the runtime stop reading the request.
        await Promise.all([reader.cancel(), raw.body?.cancel()]);
        return 'too-large';
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
  return body;
}

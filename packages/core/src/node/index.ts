/**
 * The Node.js layer the Node bindings (`@hookgate/express`, `@hookgate/koa`) share: reading a
 * request's exact body bytes, and settling a claim on the status the response put on the wire.
 * Web-standard bindings (`@hookgate/hono`) do not use it, so the main entry stays free of
 * `node:` modules here.
 *
 * @packageDocumentation
 * @module @hookgate/core/node
 */
/// <reference types="node" />
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Claim, settleFromResponse } from '../index.js';

/** What became of a request body: its bytes, or why there are none. */
export type BodyRead =
  | Buffer
  /** The body is over the limit; the rest keeps flowing and is dropped, so a 413 can be written. */
  | 'too-large'
  /** The client went away (or the connection failed) before the body ended. */
  | 'aborted';

/**
 * Read a request's exact body bytes, up to `limit`. Never rejects: a client that goes away
 * mid-body is `'aborted'`, not an error (nothing was claimed, there is nobody to answer).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  return new Promise((resolve) => readBodyThen(req, limit, resolve));
}

/**
 * {@link readBody} for a caller that takes a callback (a Fastify body parser): `then` is called
 * once, with the bytes or why there are none, and no promise is made.
 */
export function readBodyThen(
  req: IncomingMessage,
  limit: number,
  then: (read: BodyRead) => void,
): void {
  if (Number(req.headers['content-length']) > limit) {
    then('too-large');
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const finish = (result: BodyRead) => {
    req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
    then(result);
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) finish('too-large');
    else chunks.push(chunk);
  };
  // A body of one chunk (most webhooks) is that chunk, not a copy of it: Node gives each chunk
  // a buffer of its own.
  const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  const onGone = () => finish('aborted');
  req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onGone);
}

/** Handed to a {@link settleOnWire} watch once the app is done with the request. */
export interface WireWatch {
  /**
   * The app is done: when nothing reaches the wire after all (the connection closed first),
   * settle as if it had answered `status` (with `error` when it failed). When the response
   * does end, its own status decides.
   */
  appDone(status: number, error?: unknown): void;
}

/**
 * Settle `claim` on the status the client was answered: the status of the headers written to
 * the wire, read when the response ends. An app that sets `res.statusCode` after the answer
 * left (an error handler that calls `res.status(500)` without checking `headersSent`) does not
 * change what the provider got, so it does not change the settlement: a 2xx on the wire marks
 * the claim done, anything else fails it (release or retain, per `onFailure`).
 *
 * When the connection closes before the response ends, the claim waits for the app to end it
 * anyway (an Express handler runs on), or for {@link WireWatch.appDone}, whichever comes first.
 * A handler that never answers leaves the claim to expire after `claimTtlMs` (or the
 * heartbeat's `maxMs`).
 */
export function settleOnWire(res: ServerResponse, claim: Claim): WireWatch {
  let sent: number | undefined;
  let closed = false;
  let done: { status: number; error?: unknown } | undefined;
  let settled = false;
  const settle = (status: number, error?: unknown) => {
    if (settled) return;
    settled = true;
    void settleFromResponse(claim, status, error);
  };

  // Watch the status at the moment the headers are written, as `on-headers` does: Node writes
  // them through `writeHead`, also implicitly (`res.end()` calls it with `res.statusCode`).
  const writeHead = res.writeHead;
  res.writeHead = function watchedWriteHead(this: ServerResponse, ...args: unknown[]) {
    const result = (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    sent ??= this.statusCode;
    return result;
  } as ServerResponse['writeHead'];

  // The app's error, when it told one, explains a non-2xx answer (Koa writes its 500 after).
  // `on`, not `once`: each event comes once per response, `settle` runs once whatever calls it,
  // and `once` would wrap each listener in a closure of its own. No `finish` listener: Node
  // emits `prefinish` before it, always (both once the response has ended), and `close` covers
  // a response that ended but whose socket went before either.
  const onEnded = () => settle(sent ?? res.statusCode, done?.error);
  res.on('prefinish', onEnded);
  res.on('close', () => {
    if (res.writableEnded) onEnded();
    else {
      closed = true;
      if (done !== undefined) settle(done.status, done.error);
    }
  });
  return {
    appDone(status, error) {
      done = { status, error };
      if (closed) settle(status, error);
    },
  };
}

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
  let settled = false;
  // A flag, not `off()` for each listener: every property a request is asked for costs a
  // lookup of its own where each request has a shape of its own (Express gives each one its
  // app's prototype, and V8 a new hidden class with it), and `off()` asks for several. The
  // listeners left on the request do nothing once it has settled; an `error` listener that
  // stays only keeps a later error from being thrown, as none would be if it had been removed
  // (an IncomingMessage emits `error` only to listeners).
  const finish = (result: BodyRead) => {
    if (settled) return;
    settled = true;
    then(result);
  };
  const onData = (chunk: Buffer) => {
    if (settled) return;
    size += chunk.length;
    if (size > limit) finish('too-large');
    else chunks.push(chunk);
  };
  // A body of one chunk (most webhooks) is that chunk, not a copy of it: Node gives each chunk
  // a buffer of its own.
  const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  const onGone = () => finish('aborted');
  const on = req.on;
  on.call(req, 'data', onData);
  on.call(req, 'end', onEnd);
  on.call(req, 'error', onGone);
  on.call(req, 'close', onGone);
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
 *
 * A watch may begin late. On a response that has ended already, it settles at once on the
 * status written; on one whose connection closed already, it settles on `appDone`. So an app
 * whose handler usually answers before its promise settles (a Fastify route) can wait for that
 * promise and only then watch, and most responses are never watched at all.
 */
export function settleOnWire(res: ServerResponse, claim: Claim): WireWatch {
  const watch = new Watch(res, claim);
  if (res.writableEnded) watch.ended();
  else if (res.destroyed) watch.closedEarly();
  else {
    // Watch the status at the moment the headers are written, as `on-headers` does: Node writes
    // them through `writeHead`, also implicitly (`res.end()` calls it with `res.statusCode`).
    // A second claim on the same response wraps this wrapper and listens on its own.
    //
    // Closures over the watch, not functions shared by every response that find the watch on
    // it: each property a response is asked for costs a lookup of its own where each response
    // has a shape of its own (Express gives each one its app's prototype, and V8 a new hidden
    // class with it); three small closures cost less than the five lookups they save.
    const writeHead = res.writeHead;
    res.writeHead = function watchedWriteHead(this: ServerResponse) {
      // biome-ignore lint/complexity/noArguments: passed on as they are, with no array made of them
      const result = writeHead.apply(this, arguments as never);
      watch.sent ??= this.statusCode;
      return result;
    } as ServerResponse['writeHead'];
    // No `finish` listener: Node emits `prefinish` before it, always (both once the response
    // has ended), and `close` covers a response that ended but whose socket went before either.
    const on = res.on;
    on.call(res, 'prefinish', () => watch.ended());
    on.call(res, 'close', () => watch.closed());
  }
  return watch;
}

/** One claim's watch on a response. */
class Watch implements WireWatch {
  /** The status of the headers written, once they are. */
  sent: number | undefined = undefined;
  /** The connection closed before the response ended. */
  closedFirst = false;
  /** What the app said when it was done, once it has. */
  appStatus: number | undefined = undefined;
  appError: unknown = undefined;
  settled = false;

  constructor(
    readonly res: ServerResponse,
    readonly claim: Claim,
  ) {}

  appDone(status: number, error?: unknown): void {
    this.appStatus = status;
    this.appError = error;
    if (this.closedFirst) this.settle(status, error);
  }

  /** The response ended: its status on the wire decides (the app's error explains a non-2xx). */
  ended(): void {
    this.settle(this.sent ?? this.res.statusCode, this.appError);
  }

  /** The response closed: it ended (settled already, unless `prefinish` never came), or not. */
  closed(): void {
    if (this.settled) return;
    if (this.res.writableEnded) this.ended();
    else this.closedEarly();
  }

  /** The connection closed before the response ended: settle as the app ends. */
  closedEarly(): void {
    this.closedFirst = true;
    if (this.appStatus !== undefined) this.settle(this.appStatus, this.appError);
  }

  settle(status: number, error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    void settleFromResponse(this.claim, status, error);
  }
}

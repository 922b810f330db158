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
  // Each listener comes off once the body has settled. Left on, with a flag telling them they
  // are done, they cost more than the lookups `off()` makes: 22 k instructions a request for
  // Fastify, 7 k for Koa, 5 k for Express (`pnpm bench:instructions`).
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
 * A handler that never answers leaves the claim to expire after `claimTtlMs` (with a
 * heartbeat, up to `claimTtlMs` after its `maxMs`).
 *
 * A watch may begin late. On a response that has ended already, it settles at once on
 * `res.statusCode` as it is then (the status written, unless something set `statusCode` after
 * the response ended: watch before that can happen); on one whose connection closed already, it settles on `appDone`. So an app
 * whose handler usually answers before its promise settles (a Fastify route) can wait for that
 * promise and only then watch, and most responses are never watched at all.
 *
 * With `waitForApp` (for a binding whose app always says when it is done, as Koa's `await
 * next()` does), a response that ends before the app is done (a response-deadline middleware
 * answered 503 while the handler runs) settles the claim only once {@link WireWatch.appDone}
 * comes, still on the status written: so the provider's retry meets a claim in flight, not a
 * second run alongside the first.
 */
export function settleOnWire(res: ServerResponse, claim: Claim, waitForApp = false): WireWatch {
  const watched = res as Watched;
  const before = watched[WATCH];
  if (res.writableEnded || res.destroyed) {
    const late = new Watch(res, claim, undefined, res.writeHead, waitForApp);
    if (res.writableEnded) late.ended();
    else late.closedEarly();
    return late;
  }
  // Watch the status at the moment the headers are written, as `on-headers` does: Node writes
  // them through `writeHead`, also implicitly (`res.end()` calls it with `res.statusCode`).
  const watch = new Watch(res, claim, before, before?.writeHead ?? res.writeHead, waitForApp);
  watched[WATCH] = watch;
  if (before !== undefined) return watch; // the response is watched already: one more claim
  res.writeHead = watchedWriteHead as ServerResponse['writeHead'];
  // `on`, not `once`: each event comes once per response, and `once` would wrap each listener
  // in a closure of its own. No `finish` listener: Node emits `prefinish` before it, always
  // (both once the response has ended), and `close` covers a response that ended but whose
  // socket went before either. The listeners and the `writeHead` wrapper are the same functions
  // for every response, and find its watches on it: no closure per delivery. (Closures over the
  // watch were tried: they spare Express, whose responses each have a hidden class of their own,
  // three property lookups a request, but every scavenge of its server took half as long again,
  // 2.1 -> 3.5 ms, and the route by hand beside it paid for that too.)
  res.on('prefinish', onPrefinish);
  res.on('close', onClose);
  return watch;
}

/** Where a response keeps its watches: the newest, linked to the one before it. */
const WATCH = Symbol('hookgate.wire');
type Watched = ServerResponse & { [WATCH]?: Watch };

/** One claim's watch on a response. */
class Watch implements WireWatch {
  /** The status of the headers written, once they are. */
  sent: number | undefined = undefined;
  /** The connection closed before the response ended. */
  closed = false;
  /** What the app said when it was done, once it has. */
  appStatus: number | undefined = undefined;
  appError: unknown = undefined;
  /** The status the response ended with, while the settle waits for the app (`waitForApp`). */
  wireStatus: number | undefined = undefined;
  settled = false;

  constructor(
    readonly res: ServerResponse,
    readonly claim: Claim,
    /** The watch of another claim on the same response, made before this one. */
    readonly next: Watch | undefined,
    /** The response's own `writeHead`, from before the first watch. */
    readonly writeHead: ServerResponse['writeHead'],
    /** Settle a response that ended only once the app is done, too. */
    readonly waitForApp: boolean,
  ) {}

  appDone(status: number, error?: unknown): void {
    this.appStatus = status;
    this.appError = error;
    if (this.wireStatus !== undefined) this.settle(this.wireStatus, error);
    else if (this.closed) this.settle(status, error);
  }

  /** The response ended: its status on the wire decides (the app's error explains a non-2xx). */
  ended(): void {
    const status = this.sent ?? this.res.statusCode;
    if (this.waitForApp && this.appStatus === undefined) this.wireStatus = status;
    else this.settle(status, this.appError);
  }

  /** The connection closed before the response ended: settle as the app ends. */
  closedEarly(): void {
    this.closed = true;
    if (this.appStatus !== undefined) this.settle(this.appStatus, this.appError);
  }

  settle(status: number, error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    void settleFromResponse(this.claim, status, error);
  }
}

function watchedWriteHead(this: Watched): ServerResponse {
  const newest = this[WATCH]!;
  // biome-ignore lint/complexity/noArguments: passed on as they are, with no array made of them
  const result = newest.writeHead.apply(this, arguments as never);
  for (let w: Watch | undefined = newest; w !== undefined; w = w.next) w.sent ??= this.statusCode;
  return result;
}

function onPrefinish(this: Watched): void {
  for (let w = this[WATCH]; w !== undefined; w = w.next) w.ended();
}

function onClose(this: Watched): void {
  for (let w = this[WATCH]; w !== undefined; w = w.next) {
    if (this.writableEnded) w.ended();
    else w.closedEarly();
  }
}

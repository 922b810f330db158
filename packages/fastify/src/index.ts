/**
 * Fastify plugin for hookgate: raw body, verify, claim, hand on, settle from the response.
 *
 * @packageDocumentation
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  type Admission,
  type Answer,
  admit,
  answerOf,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type Claim,
  type Verify as CoreVerify,
  createError,
  type Gate,
  settleFromResponse,
  type WebhookEvent,
} from '@hookgate/core';
import { type BodyRead, readBodyThen, settleOnWire, type WireWatch } from '@hookgate/core/node';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The webhook event, set by the `hookgate` plugin on the routes of the scope it guards. */
    webhook?: WebhookEvent;
  }
}

/** A request on a route guarded by `hookgate`: `request.webhook` is set, with a typed payload. */
export type WebhookRequest<TPayload = unknown> = FastifyRequest & {
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
 * What the plugin uses of the scope that registers it. Typed by member names only, so that the
 * one declaration of {@link hookgate} fits `register()` of a Fastify 4 instance and of a Fastify
 * 5 one (their instance types differ, and a project may have either).
 */
export interface FastifyScope {
  /** Adds the scope's raw-body parser. */
  addContentTypeParser: unknown;
  /** Adds the scope's `preHandler` and `onRoute` hooks. */
  addHook: unknown;
  /** Declares `request.webhook`. */
  decorateRequest: unknown;
  /** Tells a second registration in the same scope. */
  hasRequestDecorator: unknown;
  /** Takes the scope's own parsers out (the webhook routes read every body as bytes). */
  removeAllContentTypeParsers: unknown;
}

/**
 * The type of {@link hookgate}: an async Fastify plugin whose options are
 * {@link HookgateOptions}, so `register(hookgate, { ... })` checks them (and types `verify`'s
 * arguments) on Fastify 4 and 5 alike.
 */
export type HookgatePlugin = (scope: FastifyScope, options: HookgateOptions) => Promise<void>;

/**
 * A Fastify plugin (Fastify 4 and 5) that guards every route of the scope that registers it. In
 * that scope it replaces the content-type parsers with one that keeps any body as its exact bytes
 * (`request.body` is a `Buffer`), then, before each handler, runs `verify`, claims the delivery
 * and answers an unverified delivery (401), a body over `limit` (413) or cut off (400), an
 * invalid one (400), duplicates and stale events (200), deliveries in flight (409, or 200 with
 * `inFlight: 'ack'`), payload conflicts (422) and store failures (503) itself. A new event reaches
 * the handler as `request.webhook`; the claim is settled on the status the response puts on the
 * wire: done on a 2xx, failed otherwise (released, or retained per `onFailure`); a thrown error
 * becomes the error handler's answer, which fails it. Routes outside the scope keep their own body
 * parsing.
 *
 * Like a `fastify-plugin` plugin it is not encapsulated itself (its parser and hooks belong to
 * the registering scope), so register it inside a scope of its own, not on the root instance.
 *
 * @example
 * app.register(async (scope) => {
 *   await scope.register(hookgate, { gate, verify });
 *   scope.post('/webhooks/stripe', async (request, reply) => { ...; return reply.code(204).send(); });
 * });
 */
export const hookgate: HookgatePlugin = plugin as unknown as HookgatePlugin;

async function plugin(instance: FastifyInstance, options: HookgateOptions): Promise<void> {
  const resolved = bindingOptions('hookgate/fastify', options);
  const { limit } = resolved;

  if (instance.hasRequestDecorator('webhook')) {
    throw createError('@hookgate/fastify', 'INVALID_OPTIONS', TWICE);
  }
  instance.decorateRequest('webhook', undefined);
  // The wire watch of the request's claim, for the route wrapper below: a decoration (set in
  // every request's constructor, so requests keep one shape) rather than a WeakMap entry, which
  // costs the garbage collector more per request.
  instance.decorateRequest(CLAIM, undefined);
  instance.decorateRequest(WIRE, undefined);
  instance.decorateRequest(LATER, false);

  // Every body of this scope, whatever its content type, as exact bytes (or why there are none).
  // A callback parser: Fastify waits for no promise of ours.
  instance.removeAllContentTypeParsers();
  instance.addContentTypeParser(
    '*',
    function hookgateBody(_request: FastifyRequest, payload: IncomingMessage, done: Parsed) {
      readBodyThen(payload, limit, (read) => done(null, unread(read)));
    },
  );

  /**
   * The hook that admits a route's deliveries. A callback hook, not an async one: a delivery
   * admitted at once (verify and the store answered without waiting, see `answerOf`) reaches
   * the handler in the same turn, with no promise of the hook's own. Fastify turns a throw here
   * into its error answer (500). With `watch`, for a route with `preHandler` hooks of its own
   * (which run after this one, and may answer or throw instead of the handler), the response is
   * watched from the claim on, so that it settles the claim whoever answers.
   */
  const admitter = (watch: boolean) =>
    function hookgatePreHandler(request: FastifyRequest, reply: FastifyReply, next: Next): void {
      const admitting = admit(resolved, rawBodyOf(request, resolved), request.headers);
      const admission = answerOf(admitting);
      if (admission !== undefined) enter(request, reply, next, admission, watch);
      // `next` with no error goes on: a rejection without a reason must still stop the request.
      else {
        admitting.then(
          (later) => enter(request, reply, next, later, watch),
          (error: unknown) => next((error as Error) || new Error(NO_REASON)),
        );
      }
    };
  const hookgatePreHandler = admitter(false);
  const watchingPreHandler = admitter(true);

  // Each route of the scope gets the hook that admits its deliveries and a handler that settles
  // their claims, together: a route declared in the scope before the plugin gets neither (only
  // its raw body), as `onRoute` never sees it. The hook comes before the route's own
  // `preHandler` hooks, after the scope's.
  instance.addHook('onRoute', (route) => {
    if ((route.schema as { body?: unknown } | undefined)?.body !== undefined) {
      // Fastify would validate the bytes against it and answer 400 to every delivery.
      throw createError('@hookgate/fastify', 'INVALID_OPTIONS', BODY_SCHEMA(route.url));
    }
    const own = route.preHandler;
    route.preHandler =
      own === undefined || (Array.isArray(own) && own.length === 0)
        ? hookgatePreHandler
        : [watchingPreHandler].concat(own as never);
    const handler = route.handler;
    route.handler = function hookgateHandler(this: FastifyInstance, request, reply) {
      const claim = (request as Held)[CLAIM];
      if (claim === undefined) return handler.call(this, request, reply);
      const wire = (request as Held)[WIRE];
      let result: unknown;
      try {
        result = handler.call(this, request, reply);
      } catch (error) {
        handled(reply, claim, wire, 500, error);
        throw error;
      }
      if (isPromiseLike(result)) {
        result.then(
          () => {
            // A handler that returned (or awaited) `reply`, Fastify's "answer later", resolves
            // as the connection closes, while its work may go on: with nothing written, its end
            // says nothing of the app's answer. The claim then waits for what the response
            // writes (Fastify writes nothing once the client is gone: so until claimTtlMs).
            // Headers written (a stream cut off) say what the answer was.
            const res = reply.raw;
            if (res.headersSent || !res.destroyed || !(request as Held)[LATER]) {
              handled(reply, claim, wire, res.statusCode, undefined);
            } else if (wire === undefined) settleOnWire(res, claim);
          },
          (error: unknown) => handled(reply, claim, wire, 500, error),
        );
      } else if (wire === undefined) {
        // A callback handler may answer later: the response is watched for it.
        settleOnWire(reply.raw, claim);
      }
      return result;
    };
  });
}

/**
 * An async handler is done (`status` and `error` are what it ended with). Most have answered by
 * then (`return reply.send(...)`): the response has ended, and the status it wrote settles the
 * claim, with no watch on the response. Otherwise Fastify answers next (with the value the
 * handler resolved with, or its error handler's answer) and the response is watched for it; if
 * the client is gone already, nothing will reach the wire, and `status` settles it.
 */
function handled(
  reply: FastifyReply,
  claim: Claim,
  wire: WireWatch | undefined,
  status: number,
  error: unknown,
): void {
  if (wire !== undefined) {
    wire.appDone(status, error); // watched since the claim: the wire decides, unless it is gone
    return;
  }
  const res = reply.raw;
  if (res.writableEnded) void settleFromResponse(claim, res.statusCode, error);
  else settleOnWire(res, claim).appDone(status, error);
}

/** The admission's answer, or the handler's turn with `request.webhook` set and its claim held. */
function enter(
  request: FastifyRequest,
  reply: FastifyReply,
  next: Next,
  { answer, claim }: Admission<unknown>,
  watch: boolean,
): void {
  if (answer !== undefined) {
    send(reply, answer);
    return;
  }
  request.webhook = claim.event;
  // The route's handler settles the claim when it is done: see `hookgateHandler`.
  (request as Held)[CLAIM] = claim;
  if (watch) (request as Held)[WIRE] = settleOnWire(reply.raw, claim);
  // biome-ignore lint/suspicious/noThenProperty: the reply is Fastify's thenable already; this marks its use
  (reply as { then: unknown }).then = thenLater;
  next();
}

/**
 * The reply's `then`, on a request that holds a claim: marks that the handler used the reply as
 * a promise (`return reply` or `await reply`, to answer later), then is Fastify's own.
 */
function thenLater(this: FastifyReply, ...args: unknown[]): unknown {
  (this.request as Held)[LATER] = true;
  // Fastify's own `then`: the first up the prototype chain that is not this one (a reply
  // derived from this one, by `Object.create`, inherits this one first).
  let proto = Object.getPrototypeOf(this) as { then: (...a: unknown[]) => unknown };
  while (proto.then === thenLater) proto = Object.getPrototypeOf(proto);
  return proto.then.apply(this, args);
}

/** The claim of each request that holds one, for the route wrapper. */
const CLAIM = Symbol('hookgate.claim');
/** Its watch on the response, when the claim is watched from the start. */
const WIRE = Symbol('hookgate.wire');
/** Whether the handler used the reply as a promise (see `thenLater`). */
const LATER = Symbol('hookgate.later');
type Held = FastifyRequest & { [CLAIM]?: Claim; [WIRE]?: WireWatch; [LATER]: boolean };

/** A Fastify hook's callback. */
type Next = (error?: Error) => void;

/** A Fastify body parser's callback. */
type Parsed = (error: Error | null, body?: unknown) => void;

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';

// Not encapsulated (what `fastify-plugin` sets), so that the parser and the hook apply to the
// routes of the scope that registers the plugin; checked against Fastify's version on register.
Object.defineProperties(plugin, {
  [Symbol.for('skip-override')]: { value: true },
  [Symbol.for('fastify.display-name')]: { value: '@hookgate/fastify' },
  [Symbol.for('plugin-meta')]: { value: { name: '@hookgate/fastify', fastify: '4.x || 5.x' } },
});

/** What the parser leaves in `request.body` when there are no bytes to hand on. */
const UNREAD = {
  'too-large': Object.freeze({ hookgate: 'too-large' }),
  aborted: Object.freeze({ hookgate: 'aborted' }),
} as const;

function unread(read: BodyRead): Buffer | (typeof UNREAD)[keyof typeof UNREAD] {
  return typeof read === 'string' ? UNREAD[read] : read;
}

function send(reply: FastifyReply, { status, headers, body }: Answer): FastifyReply {
  return reply.code(status).headers(headers).send(body);
}

const EMPTY = Buffer.alloc(0);

const NO_REASON = '@hookgate/fastify: claiming the delivery failed without an error';

const TWICE =
  'the plugin is already registered in this scope or an enclosing one (or request.webhook is decorated by another plugin): ' +
  'register it once per webhook scope';

const BODY_SCHEMA = (url: string) =>
  `the webhook route ${url} declares schema.body, which Fastify would check against the raw bytes (a 400 to every delivery): check request.webhook.payload in the handler instead`;

const GONE =
  'another content-type parser consumed the request body and kept no raw bytes for hookgate. ' +
  'Register no parser in the webhook scope after hookgate, or keep the bytes (a Buffer request.body, or request.rawBody)';

/** The exact body bytes: from hookgate's parser, from a parser that kept them, or none. */
function rawBodyOf(
  request: FastifyRequest,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): BodyRead {
  const { body } = request;
  if (Buffer.isBuffer(body)) return body.length > limit ? 'too-large' : body;
  if (body === UNREAD['too-large']) return 'too-large';
  if (body === UNREAD.aborted) return 'aborted';
  // A parser the app added to the scope after hookgate's: fastify-raw-body and hand-written
  // ones keep the bytes as request.rawBody; a `parseAs: 'string'` one leaves the text.
  const kept = (request as { rawBody?: unknown }).rawBody ?? body;
  if (Buffer.isBuffer(kept) || typeof kept === 'string') {
    const bytes = Buffer.isBuffer(kept) ? kept : Buffer.from(kept);
    return bytes.length > limit ? 'too-large' : bytes;
  }
  // No parser ran: a method without a body, or an empty body without a content type.
  if (body === undefined || body === null) return EMPTY;
  throw bodyConsumed(gate, '@hookgate/fastify', GONE);
}

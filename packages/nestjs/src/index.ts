/**
 * NestJS binding for hookgate: an interceptor that guards a controller route, on Nest's
 * Express and Fastify platforms alike, inside Nest (its guards, pipes and exception filters
 * still apply).
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
  type ResolvedBindingOptions,
  type WebhookEvent,
} from '@hookgate/core';
import { type BodyRead, readBody, settleOnWire } from '@hookgate/core/node';
import {
  type CallHandler,
  createParamDecorator,
  type ExecutionContext,
  HttpException,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, EMPTY as NOTHING, type Observable, of, tap } from 'rxjs';

/** Checks a delivery's signature over the exact body bytes; `true` accepts. */
export type Verify = CoreVerify<Buffer, IncomingHttpHeaders>;

/**
 * Options of {@link WebhookInterceptor}: see {@link BindingOptions} for each field and its
 * default. `limit` applies after the platform's own body limit (Express's JSON parser: 100 kB
 * unless set; Fastify's `bodyLimit`: 1 MiB), which answers a larger body first.
 */
export type HookgateOptions<TPayload = unknown> = BindingOptions<
  TPayload,
  Buffer,
  IncomingHttpHeaders
>;

/** The request as an interceptor sees it: an Express request, or a Fastify one (`raw`). */
interface NestRequest {
  headers: IncomingHttpHeaders;
  body?: unknown;
  rawBody?: unknown;
  raw?: IncomingMessage;
  webhook?: WebhookEvent;
}

/**
 * An interceptor for a webhook route: `@UseInterceptors(new WebhookInterceptor({ gate, verify }))`
 * on the controller method. It reads the exact body bytes Nest kept as `req.rawBody` (create the
 * app with `rawBody: true`), runs `verify`, claims the delivery and answers an unverified
 * delivery (401), a body over `limit` (413) or cut off (400), an invalid one (400), duplicates and
 * stale events (200), deliveries in flight (409, or 200 with `inFlight: 'ack'`), payload conflicts
 * (422) and store failures (503) itself, as JSON, without running the handler. A new event reaches
 * the handler as {@link Webhook | `@Webhook()`} (and `req.webhook`); the claim is settled on the
 * status the response puts on the wire: done on a 2xx, failed otherwise (released, or retained
 * with the gate's `onFailure: 'retain'`), so a handler that throws fails it through the answer of
 * Nest's exception filters.
 *
 * Guards run before it (a refused request claims nothing); pipes run after it, so a rejected
 * body (400) fails the claim (released, unless `onFailure: 'retain'`). For options from Nest's injector, subclass it:
 * `@Injectable() class StripeWebhook extends WebhookInterceptor { constructor(@Inject(GATE)
 * gate: Gate) { super({ gate, verify }); } }`, then `@UseInterceptors(StripeWebhook)`.
 *
 * @example
 * @Post('stripe')
 * @HttpCode(204)
 * @UseInterceptors(new WebhookInterceptor({ gate, verify }))
 * async receive(@Webhook() event: WebhookEvent<Stripe.Event>) { ... }
 */
export class WebhookInterceptor<TPayload = unknown> implements NestInterceptor {
  readonly #options: ResolvedBindingOptions<TPayload, Buffer, IncomingHttpHeaders>;

  /** Checks the options: a wrong one throws `INVALID_OPTIONS` naming it. */
  constructor(options: HookgateOptions<TPayload>) {
    this.#options = bindingOptions('hookgate/nestjs', options);
  }

  /** Admits the delivery, then runs the handler under its claim or answers in its place. */
  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const req = http.getRequest<NestRequest>();
    // Fastify's reply wraps the Node response as `raw`; Express's response is one.
    const reply = http.getResponse<{ raw?: ServerResponse }>();
    const res = reply.raw ?? (reply as ServerResponse);
    const body = await rawBodyOf(req, this.#options);
    const { answer, claim } = await admit(this.#options, body, req.headers);
    if (answer !== undefined) {
      // Nest sends the value with the status and headers set on the response (over @HttpCode).
      res.statusCode = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
      if (!sendsItsResponse(context)) {
        // A handler that takes the response (@Res() or @Next() without passthrough) sends it
        // itself: Nest sends no value there, so the answer is written here.
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.end(JSON.stringify(answer.body));
        return NOTHING;
      }
      return of(answer.body);
    }
    req.webhook = claim.event;
    const wire = settleOnWire(res, claim);
    // How the handler ended settles the claim when nothing reaches the wire: the client left
    // first, and Nest sends nothing (or tears down the handler's Observable, which never ends).
    let end: { status: number; error?: unknown } = { status: 500, error: TORN_DOWN };
    return next.handle().pipe(
      tap({
        complete: () => {
          end = { status: res.statusCode };
        },
        error: (error: unknown) => {
          end = { status: statusOf(error), error };
        },
      }),
      finalize(() => wire.appDone(end.status, end.error)),
    );
  }
}

/**
 * The webhook event of a route guarded by {@link WebhookInterceptor}, as a handler parameter:
 * `@Webhook() event: WebhookEvent<PaymentEvent>` (key, source, parsed payload, subject and
 * event time when known).
 */
export const Webhook: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<NestRequest>().webhook,
);

/**
 * Whether Nest sends the value a route's handler returns: not when the handler takes the
 * response (`@Res()`) or `@Next()` without `passthrough: true`, as Nest's router decides it
 * (from the metadata its parameter decorators leave on the controller, under the method's
 * name: found by the handler itself, since a decorator that wraps the method may rename the
 * function). Cached per handler.
 */
function sendsItsResponse(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  let sends = sending.get(handler);
  if (sends === undefined) {
    const controller = context.getClass();
    const name = methodName(controller, handler);
    const meta = (key: string) =>
      (
        Reflect as unknown as { getMetadata?: (k: string, t: object, p: string) => unknown }
      ).getMetadata?.(key, controller, name);
    const params = Object.keys((meta(ROUTE_ARGS_METADATA) as object | undefined) ?? {});
    const takesResponse = params.some((key) => TAKES_RESPONSE.has(key.split(':')[0]!));
    sends = !takesResponse || meta(RESPONSE_PASSTHROUGH_METADATA) === true;
    sending.set(handler, sends);
  }
  return sends;
}

const sending = new WeakMap<object, boolean>();

/** The name under which `controller`'s prototype chain holds `handler`, else its own name. */
function methodName(
  controller: { prototype?: object },
  handler: object & { name: string },
): string {
  for (let proto = controller.prototype; proto != null; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (Object.getOwnPropertyDescriptor(proto, name)?.value === handler) return name;
    }
  }
  return handler.name;
}
/** `@nestjs/common`'s metadata keys, and `RouteParamtypes.RESPONSE` and `.NEXT`. */
const ROUTE_ARGS_METADATA = '__routeArguments__';
const RESPONSE_PASSTHROUGH_METADATA = '__responsePassthrough__';
const TAKES_RESPONSE = new Set(['1', '2']);

/** The status Nest's default exception filter answers `error` with. */
function statusOf(error: unknown): number {
  return error instanceof HttpException ? error.getStatus() : 500;
}

const TORN_DOWN = new Error(
  "the client went away and Nest tore down the handler's Observable before it ended",
);

const EMPTY = Buffer.alloc(0);

const GONE =
  "Nest's body parser consumed the request body and kept no raw bytes for hookgate. " +
  'Create the app with rawBody: true: NestFactory.create(AppModule, { rawBody: true }) ' +
  '(or NestFactory.create(AppModule, new FastifyAdapter(), { rawBody: true }))';

/** The exact body bytes: the ones Nest's parser kept, the unread request's, or none. */
function rawBodyOf(
  req: NestRequest,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): BodyRead | Promise<BodyRead> {
  // `rawBody`: Nest's JSON and urlencoded parsers with `rawBody: true`; a string: a text parser.
  const kept = req.rawBody ?? req.body;
  if (Buffer.isBuffer(kept) || typeof kept === 'string') {
    const bytes = Buffer.isBuffer(kept) ? kept : Buffer.from(kept);
    return bytes.length > limit ? 'too-large' : bytes;
  }
  const stream = req.raw ?? (req as unknown as IncomingMessage);
  if (kept === undefined || kept === null) {
    // No parser for its content type on Express: the body is still to be read.
    if (!stream.readableDidRead && !stream.readableEnded) return readBody(stream, limit);
    // No body at all (Fastify parses none without a content type).
    if (!hasBody(stream)) return EMPTY;
  }
  throw bodyConsumed(gate, '@hookgate/nestjs', GONE);
}

function hasBody({ headers }: IncomingMessage): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * A hookgate webhook route as a Web-standard fetch handler, `(request: Request) =>
 * Promise<Response>`: Next.js route handlers, Bun, Deno, Cloudflare Workers, Remix, and
 * anything else that speaks `Request` and `Response`. Verify, claim, run your handler, settle
 * the claim on the Response it returns.
 *
 * @packageDocumentation
 */
import {
  type Answer,
  admit,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type Verify as CoreVerify,
  createError,
  type Gate,
  optionError,
  settleFromResponse,
  type WebhookEvent,
} from '@hookgate/core';

/** Checks a delivery's signature over the exact body bytes; `true` accepts. */
export type Verify = CoreVerify<Uint8Array, Headers>;

/** Options of {@link webhookHandler}: see {@link BindingOptions} for each field and its default. */
export type WebhookHandlerOptions<TPayload = unknown> = BindingOptions<
  TPayload,
  Uint8Array,
  Headers
>;

/**
 * Your code for a new event. `event.payload` is the parsed body; `request` is the incoming
 * Request, whose body hookgate has already read (headers, URL, method and signal are as they
 * came). Return a Response: a 2xx marks the event done, any other status releases it for the
 * provider's retry (or retains it, with the gate's `onFailure: 'retain'`), and so does a throw.
 */
export type EventHandler<TPayload = unknown, TRequest extends Request = Request> = (
  event: WebhookEvent<TPayload>,
  request: TRequest,
) => Response | Promise<Response>;

/** What {@link webhookHandler} returns: a Web-standard fetch handler. */
export type FetchHandler<TRequest extends Request = Request> = (
  request: TRequest,
) => Promise<Response>;

/**
 * A fetch handler for a webhook route. It reads the raw body, runs `verify`, claims the delivery
 * and answers an unverified delivery (401), a body over `limit` (413) or cut off (400), an
 * invalid one (400), duplicates and stale events (200), deliveries in flight (409, or 200 with
 * `inFlight: 'ack'`), payload conflicts (422) and store failures (503) itself, as small JSON
 * bodies. A new event goes to `handler(event, request)`; the claim is settled on the Response it
 * returns before that Response is returned: done on a 2xx, failed otherwise (released, or retained
 * per `onFailure`).
 *
 * A handler that throws fails the claim (likewise) and the error is thrown on, to the runtime
 * (which answers 500 and logs it: Next.js, Bun, Deno, Workers) or to your own wrapper. A handler
 * that resolves anything but a Response fails the claim too, and throws an error that says so.
 *
 * @example
 * export const POST = webhookHandler({ gate, verify }, async (event) => {
 *   await recordPayment(event.payload);
 *   return new Response(null, { status: 204 });
 * });
 */
export function webhookHandler<TPayload = unknown, TRequest extends Request = Request>(
  options: WebhookHandlerOptions<TPayload>,
  handler: EventHandler<TPayload, TRequest>,
): FetchHandler<TRequest> {
  const resolved = bindingOptions('hookgate/fetch', options);
  if (typeof handler !== 'function') {
    throw optionError('hookgate', 'handler', 'must be a function (hookgate/fetch)');
  }

  return async function hookgateFetchHandler(request) {
    const body = await rawBodyOf(request, resolved);
    const { answer, claim } = await admit(resolved, body, request.headers);
    if (answer !== undefined) return reply(answer);
    let response: unknown;
    try {
      response = await handler(claim.event, request);
    } catch (error) {
      // No framework to hand the error to: settle, then let the runtime have it (a 500).
      await settleFromResponse(claim, 500, error);
      throw error;
    }
    if (!isResponse(response)) {
      const error = createError('@hookgate/fetch', 'INVALID_OPTIONS', notAResponse(response));
      await settleFromResponse(claim, 500, error);
      throw error;
    }
    // The status is final once the Response exists: a body that streams (and fails) later
    // does not change what the provider is answered.
    await settleFromResponse(claim, response.status);
    return response;
  };
}

function reply(answer: Answer): Response {
  return Response.json(answer.body, { status: answer.status, headers: answer.headers });
}

/** A Response from any realm (a runtime's own class, a polyfill): judged by its shape. */
function isResponse(value: unknown): value is Response {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Response).status === 'number' &&
    typeof (value as Response).headers === 'object'
  );
}

function notAResponse(value: unknown): string {
  const what = value === null ? 'null' : typeof value;
  return `the handler resolved ${what}, not a Response: return one (a 2xx marks the event done, anything else releases it)`;
}

const GONE =
  'the request body was read before webhookHandler() could read its raw bytes. ' +
  'Pass the Request on unread; code that must look at the body first can read request.clone()';

/** The exact body bytes, or why there are none. */
async function rawBodyOf(
  request: Request,
  { gate, limit }: { gate: Gate<unknown>; limit: number },
): Promise<Uint8Array | 'too-large' | 'aborted'> {
  if (request.bodyUsed) throw bodyConsumed(gate, '@hookgate/fetch', GONE);
  const length = request.headers.get('content-length');
  if (length !== null && Number(length) > limit) return 'too-large';
  const stream = request.body;
  if (stream === null) return new Uint8Array(0);
  if (stream.locked) throw bodyConsumed(gate, '@hookgate/fetch', GONE);
  try {
    return await readLimited(stream, limit);
  } catch {
    // The client went away (or the connection failed) before the body ended.
    return 'aborted';
  }
}

/** Read the stream to its end, counting: past `limit` bytes, stop reading and cancel it. */
async function readLimited(
  stream: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array | 'too-large'> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > limit) {
      // Not awaited: a source that never settles its cancel must not hold the 413.
      reader.cancel().catch(() => {});
      return 'too-large';
    }
    chunks.push(read.value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

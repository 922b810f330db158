import { getRequestListener } from '@hono/node-server';
import { createGate, type DecisionEvent, verifiers } from '@hookgate/core';
import {
  AFTER_ANSWER,
  httpBindingSuite,
  listen,
  onRedis,
  type ServerSetup,
  UNANSWERED,
} from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import { describe, expect, it } from 'vitest';
import { webhookHandler } from '../src/index.js';

/**
 * The route the suite posts to, as a bare fetch handler. There is no framework around it, so
 * the suite's "framework error handling" is the runtime's: a thrown error reaches the server
 * (`getRequestListener`'s `errorHandler`, or the in-process runner below), which answers 500.
 */
function route({
  options,
  handle,
  bodyParser,
}: ServerSetup): (request: Request) => Promise<Response> {
  const webhook = webhookHandler(options, async (event) => {
    const reply = await handle(event);
    // Not a Response: webhookHandler releases the claim and throws, the runtime answers 500.
    if (reply === UNANSWERED) return undefined as unknown as Response;
    // Nothing is on the wire before a fetch handler returns: the throw wins, as on Hono.
    if (reply.afterAnswer === 'throw') throw AFTER_ANSWER;
    if (reply.body === undefined) return new Response(null, { status: reply.status });
    return Response.json(reply.body, { status: reply.status });
  });
  // No body parser runs before a fetch handler; the nearest thing is your own code reading the
  // body first. Reading a clone keeps the Request's own body for hookgate (what the docs say
  // to do); reading the Request itself consumes it.
  if (bodyParser === 'keep-raw') {
    return async (request) => {
      await request.clone().json();
      return webhook(request);
    };
  }
  if (bodyParser === 'drop-raw') {
    return async (request) => {
      await request.text();
      return webhook(request);
    };
  }
  return webhook;
}

/** Served by Node through @hono/node-server; a thrown error is its errorHandler's. */
function onNode(setup: ServerSetup) {
  return listen(
    getRequestListener(route(setup), {
      errorHandler: (error) => {
        setup.onError(error);
        return Response.json({ status: 'error' }, { status: 500 });
      },
    }),
  );
}

httpBindingSuite('webhookHandler on @hono/node-server', onNode);

httpBindingSuite('webhookHandler on @hono/node-server, on ioredis', onNode, { store: onRedis() });

httpBindingSuite(
  'webhookHandler called with Request objects, without a server',
  (setup) => {
    const handler = route(setup);
    return {
      url: 'http://localhost',
      // What a runtime does with a fetch handler: a thrown error is logged and answered 500.
      fetch: async (url, init) => {
        try {
          return await handler(new Request(url, init));
        } catch (error) {
          setup.onError(error);
          return Response.json({ status: 'error' }, { status: 500 });
        }
      },
      close: async () => {},
    };
  },
  { network: false },
);

function gateWith(decisions: DecisionEvent[] = []) {
  return createGate({
    store: new MemoryStore(),
    eventId: 'id',
    onDecision: (event) => decisions.push(event),
  });
}

const post = (body: string, headers: Record<string, string> = {}) =>
  new Request('http://localhost/webhooks?tenant=t1', {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });

describe('the request the handler gets', () => {
  it('is the incoming Request: headers, URL and method as they came, its body already read', async () => {
    const seen: { url: string; method: string; header: string | null; bodyUsed: boolean }[] = [];
    let readAgain: unknown;
    const handler = webhookHandler({ gate: gateWith(), verify: false }, async (event, request) => {
      seen.push({
        url: request.url,
        method: request.method,
        header: request.headers.get('x-tenant'),
        bodyUsed: request.bodyUsed,
      });
      readAgain = await request.json().then(
        () => 'parsed',
        (error: unknown) => error,
      );
      return Response.json({ payload: event.payload });
    });
    const res = await handler(post('{ "id": "evt_1" }', { 'x-tenant': 'acme' }));
    expect(await res.json()).toEqual({ payload: { id: 'evt_1' } });
    expect(seen).toEqual([
      {
        url: 'http://localhost/webhooks?tenant=t1',
        method: 'POST',
        header: 'acme',
        bodyUsed: true,
      },
    ]);
    // and request.json() throws: the body is not there to read a second time
    expect(readAgain).toBeInstanceOf(TypeError);
  });

  it('keeps its own type: a Request subclass reaches the handler as it was passed', async () => {
    class AppRequest extends Request {
      readonly tenant = 'acme';
    }
    const handler = webhookHandler(
      { gate: gateWith(), verify: false },
      async (_event, request: AppRequest) => new Response(request.tenant),
    );
    const res = await handler(
      new AppRequest('http://localhost/', { method: 'POST', body: '{"id":"evt_1"}' }),
    );
    expect(await res.text()).toBe('acme');
  });
});

describe('what the handler returns or throws', () => {
  it('a thrown error is thrown on, unchanged, after the claim was released', async () => {
    const decisions: DecisionEvent[] = [];
    const boom = new Error('database is down');
    const handler = webhookHandler({ gate: gateWith(decisions), verify: false }, async () => {
      throw boom;
    });
    await expect(handler(post('{"id":"evt_1"}'))).rejects.toBe(boom);
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'released']);
  });

  it('anything but a Response releases the claim and throws an error that says so', async () => {
    const decisions: DecisionEvent[] = [];
    const handler = webhookHandler(
      { gate: gateWith(decisions), verify: false },
      async () => ({ status: 'ok' }) as unknown as Response,
    );
    await expect(handler(post('{"id":"evt_1"}'))).rejects.toThrow(
      /handler resolved object, not a Response/,
    );
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'released']);
  });

  it('a 2xx whose streamed body fails later leaves the event done: its status was the answer', async () => {
    const decisions: DecisionEvent[] = [];
    let runs = 0;
    const handler = webhookHandler({ gate: gateWith(decisions), verify: false }, async () => {
      runs++;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"status":'));
        },
        pull(controller) {
          controller.error(new Error('the stream broke after the status was sent'));
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    });
    const res = await handler(post('{"id":"evt_1"}'));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'done']);
    const again = await handler(post('{"id":"evt_1"}'));
    expect(await again.json()).toEqual({ status: 'duplicate' });
    expect(runs).toBe(1);
  });

  it('building it without a handler function throws, naming the option', () => {
    expect(() =>
      webhookHandler({ gate: gateWith(), verify: false }, undefined as unknown as () => Response),
    ).toThrow(/handler/);
  });
});

describe('the body hookgate reads', () => {
  it('a request without a body is an invalid delivery (400), or unverified (401) with a signature check, not an error', async () => {
    const handler = webhookHandler({ gate: gateWith(), verify: false }, () => new Response());
    const res = await handler(new Request('http://localhost/', { method: 'POST' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'invalid', reason: 'not-json' });
    // With a signature check, the empty body is checked first, as any other (docs/frameworks/fetch.md).
    const verified = webhookHandler(
      { gate: gateWith(), verify: verifiers.stripe('whsec_test') },
      () => new Response(),
    );
    const unsigned = await verified(new Request('http://localhost/', { method: 'GET' }));
    expect(unsigned.status).toBe(401);
  });

  it('a Content-Length over the limit answers 413 without reading the body', async () => {
    let pulled = false;
    // highWaterMark 0: the source is pulled only when someone reads.
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulled = true;
          controller.enqueue(new Uint8Array(16));
          controller.close();
        },
      },
      { highWaterMark: 0 },
    );
    const handler = webhookHandler(
      { gate: gateWith(), verify: false, limit: 1024 },
      () => new Response(),
    );
    const res = await handler(
      new Request('http://localhost/', {
        method: 'POST',
        body,
        headers: { 'content-length': '4096' },
        duplex: 'half',
      } as RequestInit),
    );
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toEqual({ status: 'too-large' });
    expect(pulled).toBe(false);
  });

  it('a stream that fails mid-body answers 400 aborted and claims nothing', async () => {
    const decisions: DecisionEvent[] = [];
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) controller.error(new Error('connection reset'));
        else controller.enqueue(new TextEncoder().encode('{"id":"evt_1",'));
        sent = true;
      },
    });
    const handler = webhookHandler({ gate: gateWith(decisions), verify: false }, () => {
      throw new Error('never called');
    });
    const res = await handler(
      new Request('http://localhost/', { method: 'POST', body, duplex: 'half' } as RequestInit),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'aborted' });
    expect(decisions.map((d) => d.decision)).toEqual(['aborted']);
  });
});

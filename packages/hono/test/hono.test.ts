import { getRequestListener } from '@hono/node-server';
import { createGate } from '@hookgate/core';
import {
  AFTER_ANSWER,
  httpBindingSuite,
  listen,
  onRedis,
  type ServerSetup,
  UNANSWERED,
} from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import { Hono, type MiddlewareHandler } from 'hono';
import { validator } from 'hono/validator';
import { describe, expect, it } from 'vitest';
import { hookgate } from '../src/index.js';

// From Hono 4.8.4, its own readers (c.req.json(), validators) cache the text: the bytes stay.
const readJson: MiddlewareHandler = async (c, next) => {
  await c.req.json();
  await next();
};

/** The route of the suite; `keepRaw` is the body parser its `'keep-raw'` puts in front. */
function app(
  { options, handle, onError, bodyParser }: ServerSetup,
  keepRaw: MiddlewareHandler = readJson,
): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    onError(error);
    return c.json({ status: 'error' }, 500);
  });
  // Reading the Request itself bypasses that cache: the bytes are gone.
  const dropRaw: MiddlewareHandler = async (c, next) => {
    await c.req.raw.text();
    await next();
  };
  if (bodyParser === 'keep-raw') app.use(keepRaw);
  if (bodyParser === 'drop-raw') app.use(dropRaw);
  app.post('/webhook', hookgate(options), async (c) => {
    const reply = await handle(c.get('webhook'));
    if (reply === UNANSWERED) return undefined as unknown as Response; // Hono answers 500
    // A Hono handler cannot put an answer on the wire before it throws: the throw wins.
    if (reply.afterAnswer === 'throw') throw AFTER_ANSWER;
    if (reply.body === undefined) return c.body(null, reply.status as 204);
    return c.json(reply.body, reply.status as 200);
  });
  return app;
}

httpBindingSuite('hono on @hono/node-server', (setup) =>
  listen(getRequestListener(app(setup).fetch)),
);

httpBindingSuite(
  'hono on @hono/node-server, on ioredis',
  (setup) => listen(getRequestListener(app(setup).fetch)),
  { store: onRedis() },
);

httpBindingSuite(
  'hono through app.request, without a server',
  (setup) => {
    const hono = app(setup);
    return {
      url: 'http://localhost',
      fetch: async (url, init) => hono.request(url, init),
      close: async () => {},
    };
  },
  { network: false },
);

describe('the body after hookgate()', () => {
  it('can still be read by the handler through c.req.json() and c.req.text()', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    const app = new Hono().post('/webhook', hookgate({ gate, verify: false }), async (c) =>
      c.json({ json: await c.req.json(), text: await c.req.text() }),
    );
    const body = '{ "id": "evt_1" }';
    const res = await app.request('/webhook', { method: 'POST', body });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ json: { id: 'evt_1' }, text: body });
  });
});

describe("validator('json') mounted before hookgate()", () => {
  it('verify is given the exact bytes sent, and the delivery is handled (200)', async () => {
    // Spacing JSON.stringify drops: Hono 4.2.0-4.8.3 re-serialise the parsed object (a 401 here).
    const sent = '{ "id" : "evt_1" }';
    const validated: unknown[] = [];
    const seen: string[] = [];
    const handled: unknown[] = [];
    const errors: unknown[] = [];
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    const setup: ServerSetup = {
      options: {
        gate,
        verify: (raw) => {
          seen.push(Buffer.from(raw).toString());
          return Buffer.from(raw).equals(Buffer.from(sent));
        },
      },
      handle: async (event) => {
        handled.push(event.payload);
        return { status: 200, body: { status: 'processed' } };
      },
      onError: (error) => errors.push(error),
      bodyParser: 'keep-raw',
    };
    const parser = validator('json', (value) => {
      validated.push(value);
      return value;
    });
    const server = await listen(getRequestListener(app(setup, parser).fetch));
    try {
      const res = await fetch(`${server.url}/webhook`, {
        method: 'POST',
        body: sent,
        headers: { 'content-type': 'application/json' },
      });
      expect(errors).toEqual([]);
      expect(res.status).toBe(200);
      expect(validated).toEqual([{ id: 'evt_1' }]); // the validator read the body first
      expect(seen).toEqual([sent]);
      expect(handled).toEqual([{ id: 'evt_1' }]);
    } finally {
      await server.close();
    }
  });
});

describe("Hono's default error handler (no app.onError)", () => {
  it('a handler that throws is answered 500 and its claim released: the retry runs', async () => {
    const decisions: string[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      onDecision: (event) => decisions.push(event.decision),
    });
    let runs = 0;
    const app = new Hono().post('/webhook', hookgate({ gate, verify: false }), (c) => {
      runs++;
      if (runs === 1) throw new Error('declined');
      if (runs === 2) throw 'not an Error'; // Hono passes it on: the server answers 500
      return c.json({ ok: true });
    });
    const post = () => app.request('/webhook', { method: 'POST', body: '{"id":"evt_1"}' });
    expect((await post()).status).toBe(500);
    await expect(post()).rejects.toBe('not an Error');
    expect((await post()).status).toBe(200);
    expect((await post()).status).toBe(200); // a duplicate
    expect(runs).toBe(3);
    expect(decisions).toEqual(['new', 'released', 'new', 'released', 'new', 'done', 'duplicate']);
  });
});

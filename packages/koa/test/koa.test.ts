import { request } from 'node:http';
import { createGate } from '@hookgate/core';
import {
  AFTER_ANSWER,
  BOM,
  httpBindingSuite,
  listen,
  NON_ASCII_JSON,
  onRedis,
  type ServerSetup,
  UNANSWERED,
} from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import Koa2 from 'koa2';
import Koa3 from 'koa3';
import { describe, expect, it, vi } from 'vitest';
import { hookgate } from '../src/index.js';

/** A parser that consumes the body and keeps only the parsed value, as some do. */
const dropRaw: Middleware = async (ctx, next) => {
  let text = '';
  for await (const chunk of ctx.req) text += chunk;
  (ctx.request as { body?: unknown }).body = JSON.parse(text);
  await next();
};

function server(Koa: typeof Koa3, routing: 'app' | 'router') {
  return ({ options, handle, onError, bodyParser: parser }: ServerSetup) => {
    const app = new Koa();
    app.on('error', (error: { code?: string }) => {
      // Koa itself reports every request whose connection broke mid-body (a plain Koa app
      // without hookgate does too); hookgate adds no error of its own.
      if (error.code !== 'HPE_INVALID_EOF_STATE') onError(error);
    });
    if (parser === 'keep-raw') app.use(bodyParser());
    if (parser === 'drop-raw') app.use(dropRaw);
    const guard = hookgate(options);
    const route: Middleware<{ webhook: Parameters<ServerSetup['handle']>[0] }> = async (ctx) => {
      const reply = await handle(ctx.state.webhook);
      if (reply === UNANSWERED) return; // Koa answers 404
      if (reply.afterAnswer === 'throw') {
        // Write the answer straight to the wire, then fail.
        ctx.respond = false;
        ctx.res.writeHead(reply.status, { 'content-type': 'application/json' });
        ctx.res.end(JSON.stringify(reply.body));
        throw AFTER_ANSWER;
      }
      ctx.status = reply.status;
      if (reply.body !== undefined) ctx.body = reply.body;
    };
    if (routing === 'router') {
      const router = new Router();
      router.post('/webhook', guard, route);
      app.use(router.routes());
    } else {
      app.use(async (ctx, next) => {
        if (ctx.method === 'POST' && ctx.path === '/webhook')
          await guard(ctx, () => route(ctx, next));
        else await next();
      });
    }
    return listen(app.callback());
  };
}

httpBindingSuite('koa 2', server(Koa2, 'app'));
httpBindingSuite('koa 3', server(Koa3, 'app'));
httpBindingSuite('koa 2 with @koa/router', server(Koa2, 'router'));
httpBindingSuite('koa 3 with @koa/router', server(Koa3, 'router'));
httpBindingSuite('koa 3 with @koa/router on ioredis', server(Koa3, 'router'), { store: onRedis() });

describe('@koa/bodyparser in front', () => {
  it('leaves a type it does not parse unread, and hookgate() still reads the raw bytes', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    const app = new Koa3();
    app.use(bodyParser());
    app.use(hookgate({ gate, verify: (raw) => raw.toString() === body }));
    app.use((ctx) => {
      ctx.body = { payload: ctx.state.webhook.payload };
    });
    const server = await listen(app.callback());
    const body = '{"id":"evt_1"}';
    try {
      const res = await fetch(`${server.url}/webhook`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/vnd.provider+json' },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ payload: { id: 'evt_1' } });
    } finally {
      await server.close();
    }
  });

  /** Posts `bytes` as JSON through bodyParser() and hookgate() with a verify over the bytes sent. */
  async function postParsed(bytes: Buffer) {
    const store = new MemoryStore();
    const decisions: string[] = [];
    const gate = createGate({
      store,
      eventId: 'id',
      onDecision: (event) => decisions.push(event.decision),
    });
    const verified: Buffer[] = [];
    let runs = 0;
    const app = new Koa3();
    app.use(bodyParser());
    app.use(
      hookgate({
        gate,
        verify: (raw) => {
          verified.push(Buffer.from(raw));
          return raw.equals(bytes); // what a signature over the bytes sent checks
        },
      }),
    );
    app.use((ctx) => {
      runs++;
      ctx.status = 204;
    });
    const server = await listen(app.callback());
    try {
      const res = await fetch(`${server.url}/webhook`, {
        method: 'POST',
        body: new Uint8Array(bytes),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      await res.arrayBuffer();
      return { status: res.status, verified, runs, decisions, store };
    } finally {
      await server.close();
    }
  }

  it('parses JSON and keeps rawBody: a UTF-8 body without a BOM reaches verify byte-exact', async () => {
    const seen = await postParsed(NON_ASCII_JSON);
    expect(seen.status).toBe(204);
    expect(seen.verified).toEqual([NON_ASCII_JSON]);
    expect(seen.runs).toBe(1);
  });

  it('drops a BOM as it decodes, so a signature over the bytes sent fails (401, nothing claimed)', async () => {
    const seen = await postParsed(Buffer.concat([BOM, NON_ASCII_JSON]));
    expect(seen.status).toBe(401);
    expect(seen.verified).toEqual([NON_ASCII_JSON]); // the bytes sent, less the BOM
    expect(seen.runs).toBe(0);
    expect(seen.decisions).toEqual(['unverified']);
    expect(seen.store.size).toBe(0);
  });
});

describe('a client gone mid-body', () => {
  /**
   * The app 'error' codes of one POST whose client goes away after 1 KB of a 5 KB body, on an
   * app whose last middleware waits for the request to close (a plain app), or is guarded by
   * hookgate() (which claims nothing and reports `aborted`).
   */
  async function appErrors(Koa: typeof Koa3, guarded: boolean) {
    const app = new Koa();
    const errors: string[] = [];
    app.on('error', (error: { code?: string; message: string }) =>
      errors.push(error.code ?? error.message),
    );
    const decisions: string[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      onDecision: (event) => decisions.push(event.decision),
    });
    let [arrived, closed] = [false, false];
    app.use(async (ctx, next) => {
      arrived = true;
      ctx.req.once('close', () => {
        closed = true;
      });
      await next();
    });
    if (guarded) app.use(hookgate({ gate, verify: false }));
    app.use(async (ctx) => {
      await new Promise((resolve) => ctx.req.once('close', resolve));
      ctx.status = 204;
    });
    const server = await listen(app.callback());
    try {
      const req = request(`${server.url}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '5000' },
      });
      req.on('error', () => {});
      req.write(`{"id":"evt_1","pad":"${'p'.repeat(1000)}`);
      await vi.waitFor(() => expect(arrived).toBe(true)); // the server has the request
      req.destroy();
      await vi.waitFor(() => {
        expect(closed).toBe(true);
        expect(errors.length).toBeGreaterThan(0);
        if (guarded) expect(decisions).toEqual(['aborted']);
      });
      // The socket's events are over (its error comes before its close): a turn for any
      // error they made Koa emit later.
      await new Promise((resolve) => setImmediate(resolve));
      return errors;
    } finally {
      await server.close();
    }
  }

  for (const [name, Koa] of [
    ['koa 2', Koa2],
    ['koa 3', Koa3],
  ] as const) {
    it(`${name}: Koa emits one app 'error', HPE_INVALID_EOF_STATE, with or without hookgate()`, async () => {
      expect(await appErrors(Koa, false)).toEqual(['HPE_INVALID_EOF_STATE']);
      expect(await appErrors(Koa, true)).toEqual(['HPE_INVALID_EOF_STATE']);
    });
  }
});

describe('a response that ends before the handler is done', () => {
  for (const [name, Koa] of [
    ['koa 2', Koa2],
    ['koa 3', Koa3],
  ] as const) {
    it(`${name}: a deadline middleware's 503 settles the claim only once the handler is done: the retry meanwhile is 409, never a second run beside the first`, async () => {
      const decisions: string[] = [];
      const gate = createGate({
        store: new MemoryStore(),
        eventId: 'id',
        onDecision: (event) => decisions.push(event.decision),
      });
      let late!: () => void;
      let finish!: () => void;
      const working = new Promise<void>((resolve) => {
        finish = resolve;
      });
      let runs = 0;
      const app = new Koa();
      app.on('error', () => {});
      // A response deadline in front (as koa-timeout-style middleware does): answers 503 when
      // `late()` is called before the chain has finished.
      app.use(async (ctx, next) => {
        const deadline = new Promise<'late'>((resolve) => {
          late = () => resolve('late');
        });
        if ((await Promise.race([next().then(() => 'ok' as const), deadline])) === 'late') {
          ctx.status = 503;
          ctx.body = { status: 'timeout' };
        }
      });
      app.use(hookgate({ gate, verify: false }));
      app.use(async (ctx) => {
        runs++;
        if (runs === 1) await working;
        ctx.body = { ok: true };
      });
      const server = await listen(app.callback());
      const post = () =>
        fetch(`${server.url}/webhook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"id":"evt_1"}',
        });
      try {
        const first = post();
        await vi.waitFor(() => expect(runs).toBe(1));
        late();
        expect((await first).status).toBe(503);
        expect((await post()).status).toBe(409); // the first handler still runs
        expect(decisions).toEqual(['new', 'in-flight']);
        finish();
        // Done now, and the provider was answered 503: released, so its retry runs it again.
        await vi.waitFor(() => expect(decisions).toEqual(['new', 'in-flight', 'released']));
        expect((await post()).status).toBe(200);
        expect(runs).toBe(2);
      } finally {
        await server.close();
      }
    });
  }
});

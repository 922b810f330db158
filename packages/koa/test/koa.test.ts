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
import { describe, expect, it } from 'vitest';
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

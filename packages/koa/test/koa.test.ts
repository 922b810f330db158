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
});

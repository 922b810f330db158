import { httpBindingSuite, listen, type ServerSetup } from '@hookgate/http-conformance';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import Koa2 from 'koa2';
import Koa3 from 'koa3';
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
    app.on('error', onError);
    if (parser === 'keep-raw') app.use(bodyParser());
    if (parser === 'drop-raw') app.use(dropRaw);
    const guard = hookgate(options);
    const route: Middleware<{ webhook: Parameters<ServerSetup['handle']>[0] }> = async (ctx) => {
      const reply = await handle(ctx.state.webhook);
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

import { getRequestListener } from '@hono/node-server';
import { httpBindingSuite, listen, type ServerSetup } from '@hookgate/http-conformance';
import { Hono, type MiddlewareHandler } from 'hono';
import { hookgate } from '../src/index.js';

function app({ options, handle, onError, bodyParser }: ServerSetup): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    onError(error);
    return c.json({ status: 'error' }, 500);
  });
  // Hono's own readers (c.req.json(), validators) cache the text, which keeps the bytes.
  const keepRaw: MiddlewareHandler = async (c, next) => {
    await c.req.json();
    await next();
  };
  // Reading the Request itself bypasses that cache: the bytes are gone.
  const dropRaw: MiddlewareHandler = async (c, next) => {
    await c.req.raw.text();
    await next();
  };
  if (bodyParser === 'keep-raw') app.use(keepRaw);
  if (bodyParser === 'drop-raw') app.use(dropRaw);
  app.post('/webhook', hookgate(options), async (c) => {
    const reply = await handle(c.get('webhook'));
    if (reply.body === undefined) return c.body(null, reply.status as 204);
    return c.json(reply.body, reply.status as 200);
  });
  return app;
}

httpBindingSuite('hono on @hono/node-server', (setup) =>
  listen(getRequestListener(app(setup).fetch)),
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

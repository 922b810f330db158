/**
 * Express, Koa and Hono apps for `pnpm bench:instructions`, called in process: each binding's
 * route against the same route written by hand around `gate.run`, over one gate. Express and
 * Koa are called through `light-my-request` (Node's request and response without a socket, as
 * Fastify's `inject()`), Hono through `app.request()` (its fetch handler).
 */
import type { IncomingMessage } from 'node:http';
import {
  type Gate,
  type HeaderBag,
  InvalidDeliveryError,
  type Outcome,
  StoreUnavailableError,
} from '@hookgate/core';

// Each framework is imported when its row is made, so that a process measuring one loads no
// other: what else is loaded moves where the collections fall, and so the count.
let counter = 0;

/** The body of a Stripe-like delivery of a new event, as `pnpm bench`'s in-process rows post. */
export function newEvent(): string {
  return JSON.stringify({
    id: `evt_${(counter++).toString(36)}`,
    type: 'invoice.paid',
    created: 1_700_000_000,
    data: { object: { id: 'in_1', customer: 'cus_1', total: 4200, currency: 'eur' } },
  });
}

/** One request to a side: a new delivery of `body`, answered with this status. */
export type Call = (body: string) => Promise<number>;

const HEADERS = { 'content-type': 'application/json' };
const work = () => ({ ok: true });

/** The answer a careful route by hand gives for each outcome of `gate.run`. */
function answerByHand(outcome: Outcome<unknown>): { status: number; body: unknown } {
  if (outcome.status === 'processed') return { status: 200, body: outcome.result };
  const status = outcome.status === 'in-flight' ? 409 : outcome.status === 'conflict' ? 422 : 200;
  return { status, body: { status: outcome.status } };
}

/** `gate.run`'s errors as a route by hand answers them; anything else is the framework's. */
function refusalByHand(error: unknown): { status: number; body: unknown } {
  if (error instanceof InvalidDeliveryError) return { status: 400, body: { status: 'invalid' } };
  if (error instanceof StoreUnavailableError) {
    return { status: 503, body: { status: 'unavailable' } };
  }
  throw error;
}

async function runByHand(gate: Gate, rawBody: Uint8Array, headers: HeaderBag) {
  try {
    return answerByHand(await gate.run({ rawBody, headers }, work));
  } catch (error) {
    return refusalByHand(error);
  }
}

/** A route by hand reads the body as Node gives it. */
function bytesOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function injected(): Promise<(dispatch: never) => Call> {
  const { default: inject } = await import('light-my-request');
  return (dispatch) => async (body) =>
    (await inject(dispatch, { method: 'POST', url: '/webhooks', payload: body, headers: HEADERS }))
      .statusCode;
}

export async function expressSides(gate: () => Gate): Promise<[Call, Call]> {
  const [{ default: express }, { hookgate: expressHookgate }, call] = await Promise.all([
    import('express'),
    import('@hookgate/express'),
    injected(),
  ]);
  const binding = express();
  binding.post('/webhooks', expressHookgate({ gate: gate(), verify: false }), (_req, res) => {
    res.status(200).json(work());
  });
  const hand = express();
  const handGate = gate();
  hand.post('/webhooks', async (req, res) => {
    const { status, body } = await runByHand(handGate, await bytesOf(req), req.headers);
    res.status(status).json(body);
  });
  return [call(binding as never), call(hand as never)];
}

export async function koaSides(gate: () => Gate): Promise<[Call, Call]> {
  const [{ default: Koa }, { default: Router }, { hookgate: koaHookgate }, call] =
    await Promise.all([import('koa'), import('@koa/router'), import('@hookgate/koa'), injected()]);
  const binding = new Koa();
  const bindingRouter = new Router();
  bindingRouter.post('/webhooks', koaHookgate({ gate: gate(), verify: false }), (ctx) => {
    ctx.body = work();
  });
  binding.use(bindingRouter.routes());
  const hand = new Koa();
  const handRouter = new Router();
  const handGate = gate();
  handRouter.post('/webhooks', async (ctx) => {
    const { status, body } = await runByHand(handGate, await bytesOf(ctx.req), ctx.req.headers);
    ctx.status = status;
    ctx.body = body;
  });
  hand.use(handRouter.routes());
  return [call(binding.callback() as never), call(hand.callback() as never)];
}

export async function honoSides(gate: () => Gate): Promise<[Call, Call]> {
  const [{ Hono }, { hookgate: honoHookgate }] = await Promise.all([
    import('hono'),
    import('@hookgate/hono'),
  ]);
  const binding = new Hono();
  binding.post('/webhooks', honoHookgate({ gate: gate(), verify: false }), (c) => c.json(work()));
  const hand = new Hono();
  const handGate = gate();
  hand.post('/webhooks', async (c) => {
    const rawBody = new Uint8Array(await c.req.arrayBuffer());
    const { status, body } = await runByHand(handGate, rawBody, c.req.raw.headers);
    return c.json(body, status as 200);
  });
  // With the Content-Length an HTTP request brings (as `@hono/node-server` passes it on): a
  // Request made from a string has none, and the binding would take its path for a chunked body.
  const called =
    (app: InstanceType<typeof Hono>): Call =>
    async (body) => {
      const headers = { ...HEADERS, 'content-length': String(Buffer.byteLength(body)) };
      const response = await app.request('/webhooks', { method: 'POST', body, headers });
      await response.arrayBuffer();
      return response.status;
    };
  return [called(binding), called(hand)];
}

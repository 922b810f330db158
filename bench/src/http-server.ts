/**
 * The HTTP benchmark's server, run as a child process so that it does not share an event loop
 * with autocannon: one framework, two routes on one app, `POST /hookgate` (the binding) and
 * `POST /baseline` (the same route written by hand with the baseline commands). Both use one
 * ioredis client. Started as `http-server.ts <express|koa|hono|fastify> <redisPort>`; it sends its
 * port to the parent over IPC, its CPU time whenever the parent asks (`{ cpu: true }`), and its
 * clock (`{ clock: true }`).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createGate } from '@hookgate/core';
import { hookgate as expressHookgate } from '@hookgate/express';
import { hookgate as fastifyHookgate } from '@hookgate/fastify';
import { hookgate as honoHookgate } from '@hookgate/hono';
import { IoRedisStore } from '@hookgate/ioredis';
import { hookgate as koaHookgate } from '@hookgate/koa';
import Router from '@koa/router';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import Koa from 'koa';

const [framework, port] = process.argv.slice(2);
const redis = new Redis({ host: '127.0.0.1', port: Number(port) });
const gate = createGate({ store: new IoRedisStore(redis), eventId: 'id' });
const CLAIM_TTL = 300_000;
const DONE_TTL = 86_400_000;

/** What the baseline routes do by hand: claim with `SET NX PX`; `null` for a duplicate. */
async function claimByHand(body: string): Promise<{ key: string; token: string } | null> {
  const payload = JSON.parse(body) as { id: string };
  const key = `hookgate:evt:${payload.id}`;
  const token = randomUUID();
  const set = await redis.set(key, 'p:' + token, 'PX', CLAIM_TTL, 'NX');
  return set === null ? null : { key, token };
}

const doneByHand = (claim: { key: string; token: string }) =>
  redis.set(claim.key, 'd:' + claim.token, 'PX', DONE_TTL);

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function expressApp(): Server {
  const app = express();
  app.post('/hookgate', expressHookgate({ gate, verify: false }), (_req, res) => {
    res.status(200).json({ ok: true });
  });
  app.post('/baseline', async (req, res) => {
    const claim = await claimByHand(await readBody(req));
    if (claim === null) {
      res.status(200).json({ status: 'duplicate' });
      return;
    }
    res.status(200).json({ ok: true });
    await doneByHand(claim);
  });
  return createServer(app);
}

function koaApp(): Server {
  const app = new Koa();
  const router = new Router();
  router.post('/hookgate', koaHookgate({ gate, verify: false }), (ctx) => {
    ctx.body = { ok: true };
  });
  router.post('/baseline', async (ctx) => {
    const claim = await claimByHand(await readBody(ctx.req));
    if (claim === null) {
      ctx.body = { status: 'duplicate' };
      return;
    }
    ctx.body = { ok: true };
    await doneByHand(claim);
  });
  app.use(router.routes());
  return createServer(app.callback());
}

function honoApp(): Server {
  const app = new Hono();
  app.post('/hookgate', honoHookgate({ gate, verify: false }), (c) => c.json({ ok: true }));
  app.post('/baseline', async (c) => {
    const claim = await claimByHand(await c.req.text());
    if (claim === null) return c.json({ status: 'duplicate' });
    await doneByHand(claim);
    return c.json({ ok: true });
  });
  return serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
}

/** Each route in a scope of its own, as the plugin's docs say; both read the body as bytes. */
async function fastifyApp(): Promise<Server> {
  const app = Fastify();
  await app.register(async (scope) => {
    await scope.register(fastifyHookgate, { gate, verify: false });
    scope.post('/hookgate', async (_request, reply) => reply.code(200).send({ ok: true }));
  });
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
      done(null, body),
    );
    scope.post('/baseline', async (request, reply) => {
      const claim = await claimByHand((request.body as Buffer).toString('utf8'));
      if (claim === null) return reply.code(200).send({ status: 'duplicate' });
      await doneByHand(claim);
      return reply.code(200).send({ ok: true });
    });
  });
  await app.ready();
  return app.server;
}

const server =
  framework === 'express'
    ? expressApp()
    : framework === 'koa'
      ? koaApp()
      : framework === 'fastify'
        ? await fastifyApp()
        : honoApp();
const listening = () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
};
if (server.listening) listening();
else if (framework === 'hono') server.once('listening', listening);
else server.listen(0, '127.0.0.1', listening);
// The parent asks for this process's CPU time around each load, so that a route's CPU per
// request can be told apart from autocannon's and Redis's share of the machine; and, to profile
// (`profile-http.ts`), for its monotonic clock in µs, the clock of `--cpu-prof`'s samples.
process.on('message', (message) => {
  const { cpu, clock } = message as { cpu?: boolean; clock?: boolean };
  if (cpu) process.send?.({ cpu: process.cpuUsage() });
  if (clock) process.send?.({ clock: Number(process.hrtime.bigint() / 1000n) });
});
process.on('disconnect', () => {
  server.close();
  redis.disconnect();
  process.exit(0);
});

import { Readable } from 'node:stream';
import { createGate, type DecisionEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import type { FastifyInstance } from 'fastify';
import fastify4 from 'fastify4';
import fastify5 from 'fastify5';
import { afterEach, describe, expect, it } from 'vitest';
import { hookgate } from '../src/index.js';

/** Either major's factory, as the tests use it (their instances differ only in types). */
type Factory = (options?: {
  forceCloseConnections?: boolean;
  bodyLimit?: number;
}) => FastifyInstance;
const majors = [
  ['fastify 4', fastify4 as unknown as Factory],
  ['fastify 5', fastify5 as unknown as Factory],
] as const;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function gateWith(decisions: string[] = []) {
  return createGate({
    store: new MemoryStore(),
    eventId: 'id',
    onDecision: (event: DecisionEvent) => decisions.push(event.decision),
  });
}

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

for (const [name, fastify] of majors) {
  describe(name, () => {
    let app: FastifyInstance;
    let url: string;
    afterEach(() => app.close());

    async function start(
      build: (app: FastifyInstance) => unknown,
      options: { bodyLimit?: number } = {},
    ): Promise<void> {
      app = fastify({ forceCloseConnections: true, ...options });
      await build(app);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address();
      url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    }

    it('a claim that fails without a reason (a gate of another making) stops the request: 500, no handler', async () => {
      let ran = 0;
      const gate = gateWith();
      // A wrapper whose claim rejects with nothing: admit passes on what it does not answer.
      const wrapper = Object.assign(Object.create(null), {
        batched: false,
        claim: () => Promise.reject(undefined),
      }) as typeof gate;
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: wrapper, verify: false });
          scope.post('/webhooks', async () => {
            ran++;
            return { ok: true };
          });
        }),
      );
      const res = await fetch(`${url}/webhooks`, json({ id: 'evt_1' }));
      expect(res.status).toBe(500);
      expect(ran).toBe(0);
    });

    it('guards only the routes of the scope that registers it; other routes keep their own body parsing', async () => {
      const stripe = gateWith();
      const github = gateWith();
      await start((app) => {
        app.post('/api/orders', async (request) => ({ body: request.body }));
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: stripe, verify: false });
          scope.post('/webhooks/stripe', async (request) => ({
            raw: Buffer.isBuffer(request.body) ? request.body.toString() : null,
            key: request.webhook?.key,
          }));
        });
        // A sibling scope has its own registration, with its own gate.
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: github, verify: false });
          scope.post('/webhooks/github', async (request) => ({ key: request.webhook?.key }));
        });
        app.register(async (scope) => {
          scope.post('/other', async (request) => ({
            body: request.body,
            webhook: request.webhook ?? null,
          }));
        });
      });

      // Outside the webhook scopes: Fastify's JSON parser, no webhook, no claim.
      for (const path of ['/api/orders', '/other', '/api/orders']) {
        const res = await fetch(`${url}${path}`, json({ id: 'evt_1', n: 1 }));
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ body: { id: 'evt_1', n: 1 } });
      }
      const other = await fetch(`${url}/other`, json({ id: 'evt_1' }));
      expect(((await other.json()) as { webhook: unknown }).webhook).toBeNull();

      // Inside: the exact bytes as request.body, and the event as request.webhook.
      const text = '{ "id" : "evt_1" }';
      const res = await fetch(`${url}/webhooks/stripe`, { ...json(null), body: text });
      expect(await res.json()).toEqual({ raw: text, key: 'evt:evt_1' });
      expect(await (await fetch(`${url}/webhooks/stripe`, json({ id: 'evt_1' }))).json()).toEqual({
        status: 'duplicate',
      });
      // The sibling scope claims on its own gate: the same id is new there.
      const gh = await fetch(`${url}/webhooks/github`, json({ id: 'evt_1' }));
      expect(await gh.json()).toEqual({ key: 'evt:evt_1' });
    });

    it("guards the routes of a scope registered with a prefix, at the prefix's paths; a route outside it is not guarded", async () => {
      const decisions: string[] = [];
      let ran = 0;
      // The docs' `webhooks` plugin: the gate and its routes, registered under a prefix.
      const webhooks = async (scope: FastifyInstance) => {
        await scope.register(hookgate, { gate: gateWith(decisions), verify: false });
        scope.post('/stripe', async (request) => {
          ran++;
          return { key: request.webhook?.key };
        });
      };
      await start((app) => {
        app.register(webhooks, { prefix: '/webhooks' });
        app.post('/stripe', async (request) => ({
          body: request.body,
          webhook: request.webhook ?? null,
        }));
      });

      expect(await (await fetch(`${url}/webhooks/stripe`, json({ id: 'evt_1' }))).json()).toEqual({
        key: 'evt:evt_1',
      });
      // The redelivery is a duplicate: the handler ran once.
      expect(await (await fetch(`${url}/webhooks/stripe`, json({ id: 'evt_1' }))).json()).toEqual({
        status: 'duplicate',
      });
      expect(ran).toBe(1);
      expect(decisions).toEqual(['new', 'done', 'duplicate']);

      // The same path outside the prefix: Fastify's JSON parser, no webhook, no claim.
      const outside = await fetch(`${url}/stripe`, json({ id: 'evt_1' }));
      expect(outside.status).toBe(200);
      expect(await outside.json()).toEqual({ body: { id: 'evt_1' }, webhook: null });
      expect(decisions).toEqual(['new', 'done', 'duplicate']);
    });

    it('reads any content type as bytes inside the scope, also a body without one', async () => {
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: gateWith(), verify: false });
          scope.post('/webhook', async (request) => ({
            id: (request.webhook!.payload as { id: string }).id,
          }));
        }),
      );
      const form = await fetch(`${url}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: '{"id":"evt_text"}',
      });
      expect(await form.json()).toEqual({ id: 'evt_text' });
      const bare = await fetch(`${url}/webhook`, {
        method: 'POST',
        body: new Uint8Array(Buffer.from('{"id":"evt_bin"}')),
      });
      expect(await bare.json()).toEqual({ id: 'evt_bin' });
    });

    it('a Content-Type that is not a media type: Fastify 5 refuses it before the plugin (415, no decision), Fastify 4 hands it on', async () => {
      const decisions: string[] = [];
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: gateWith(decisions), verify: false });
          scope.post('/webhook', async () => ({ ok: true }));
        }),
      );
      const res = await fetch(`${url}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'json' },
        body: '{"id":"evt_ct"}',
      });
      if (name === 'fastify 5') {
        expect(res.status).toBe(415);
        expect(((await res.json()) as { code: string }).code).toBe(
          'FST_ERR_CTP_INVALID_MEDIA_TYPE',
        );
        expect(decisions).toEqual([]);
      } else {
        expect(res.status).toBe(200);
        expect(decisions).toEqual(['new', 'done']);
      }
    });

    it('refuses a webhook route with a body schema when the app starts (Fastify would check it against the bytes)', async () => {
      await expect(
        start((app) =>
          app.register(async (scope) => {
            await scope.register(hookgate, { gate: gateWith(), verify: false });
            scope.post(
              '/webhook',
              { schema: { body: { type: 'object', required: ['id'] } } },
              async () => ({ ok: true }),
            );
          }),
        ),
      ).rejects.toThrow(/webhook route \/webhook declares schema\.body/);
    });

    it('guards every method of its scope: a GET or HEAD is 401 (a GET 400 with verify: false)', async () => {
      for (const verify of [() => false, false] as const) {
        await start((app) =>
          app.register(async (scope) => {
            await scope.register(hookgate, { gate: gateWith(), verify });
            scope.get('/webhook', async () => ({ ok: true }));
          }),
        );
        expect((await fetch(`${url}/webhook`)).status).toBe(verify === false ? 400 : 401);
        if (verify !== false) {
          expect((await fetch(`${url}/webhook`, { method: 'HEAD' })).status).toBe(401);
        }
        await app.close();
      }
    });

    it("Fastify's bodyLimit does not apply in the scope: the plugin's limit does", async () => {
      await start(
        (app) =>
          app.register(async (scope) => {
            await scope.register(hookgate, { gate: gateWith(), verify: false, limit: 1_000 });
            scope.post('/webhook', async () => ({ ok: true }));
          }),
        { bodyLimit: 100 },
      );
      const pad = (n: number) => json({ id: `evt_${n}`, pad: 'x'.repeat(n) });
      expect((await fetch(`${url}/webhook`, pad(500))).status).toBe(200);
      expect((await fetch(`${url}/webhook`, pad(2_000))).status).toBe(413);
    });

    it('refuses a second registration in the same scope or a nested one, when the app starts', async () => {
      const gate = gateWith();
      const twice = fastify();
      twice.register(async (scope) => {
        await scope.register(hookgate, { gate, verify: false });
        await scope.register(hookgate, { gate, verify: false });
      });
      await expect(twice.ready()).rejects.toThrow(/already registered/);
      const nested = fastify();
      nested.register(async (scope) => {
        await scope.register(hookgate, { gate, verify: false });
        scope.register(async (inner) => {
          await inner.register(hookgate, { gate, verify: false });
        });
      });
      await expect(nested.ready()).rejects.toThrow(/already registered/);
      await twice.close();
      await nested.close();
      app = fastify();
    });

    it('refuses wrong options when the app starts, naming the option', async () => {
      const gate = gateWith();
      app = fastify();
      app.register(async (scope) => {
        await scope.register(hookgate, { gate } as never);
      });
      await expect(app.ready()).rejects.toThrow(/verify/);
    });

    it('settles on the status each kind of handler answers, whether it answers before its end or after', async () => {
      const decisions: string[] = [];
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: gateWith(decisions), verify: false });
          scope.setErrorHandler((_error, _request, reply) => reply.code(202).send({ ok: 'late' }));
          scope.post('/sync-send', (_request, reply) => {
            reply.code(201).send({ ok: true });
          });
          scope.post('/sync-later', (_request, reply) => {
            setTimeout(() => reply.code(500).send({ ok: false }), 20);
          });
          scope.post('/async-value', async () => ({ ok: true }));
          scope.post('/async-later', async (_request, reply) => {
            setTimeout(() => reply.code(503).send({ ok: false }), 20);
            return reply;
          });
          scope.post('/async-404', async (_request, reply) => reply.callNotFound());
          // Its error handler answers 202: what reached the provider decides.
          scope.post('/throws', async () => {
            throw new Error('handled by the scope');
          });
        }),
      );
      const settled = async (path: string, status: number) => {
        const before = decisions.length;
        const res = await fetch(`${url}${path}`, json({ id: path }));
        expect(res.status).toBe(status);
        for (let waited = 0; decisions.length < before + 2 && waited < 5_000; waited += 5) {
          await sleep(5);
        }
        return decisions.slice(before);
      };
      expect(await settled('/sync-send', 201)).toEqual(['new', 'done']);
      expect(await settled('/sync-later', 500)).toEqual(['new', 'released']);
      expect(await settled('/async-value', 200)).toEqual(['new', 'done']);
      expect(await settled('/async-later', 503)).toEqual(['new', 'released']);
      expect(await settled('/async-404', 404)).toEqual(['new', 'released']);
      expect(await settled('/throws', 202)).toEqual(['new', 'done']);
    });

    it("admits before the route's own preHandler hooks, after the scope's; a route declared before the plugin is not guarded", async () => {
      const seen: string[] = [];
      await start((app) =>
        app.register(async (scope) => {
          scope.post('/declared-first', async (request) => ({ webhook: request.webhook ?? null }));
          await scope.register(hookgate, { gate: gateWith(), verify: false });
          scope.addHook('preHandler', async (request) => {
            seen.push(`scope: ${request.webhook === undefined ? 'none' : 'webhook'}`);
          });
          scope.post(
            '/webhooks',
            {
              preHandler: async (request) => {
                seen.push(`route: ${request.webhook === undefined ? 'none' : 'webhook'}`);
              },
            },
            async () => ({ ok: true }),
          );
        }),
      );
      expect((await fetch(`${url}/webhooks`, json({ id: 'evt_1' }))).status).toBe(200);
      expect(seen).toEqual(['scope: none', 'route: webhook']);
      // onRoute never saw it: its body is still read as bytes, and nothing claims it.
      const first = await fetch(`${url}/declared-first`, json({ id: 'evt_2' }));
      expect(await first.json()).toEqual({ webhook: null });
    });

    it('settles a claim whose handler resolves without sending after the client left', async () => {
      // Fastify sends nothing for such a handler once the request is aborted: the end of the
      // handler is then the only sign it is done, and its status (200 here) decides.
      const decisions: string[] = [];
      let open!: () => void;
      const held = new Promise<void>((resolve) => {
        open = resolve;
      });
      let failing = true;
      let entered = 0;
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: gateWith(decisions), verify: false });
          scope.post('/undefined', async () => {
            entered++;
            await held;
          });
          scope.post('/value', async () => {
            entered++;
            await held;
            return { ok: true };
          });
          scope.post('/throws', async () => {
            entered++;
            await held;
            if (failing) throw new Error('database is down');
            return { ok: true };
          });
        }),
      );
      for (const [i, path] of ['/undefined', '/value', '/throws'].entries()) {
        const client = new AbortController();
        const sent = fetch(`${url}${path}`, { ...json({ id: path }), signal: client.signal }).catch(
          (e) => e,
        );
        // Abort once the handler runs and waits (not after a fixed time, which a busy machine
        // can outlast before the request even arrives).
        const taken = () => entered > i;
        for (let waited = 0; !taken() && waited < 5_000; waited += 5) await sleep(5);
        expect(taken()).toBe(true);
        client.abort();
        expect(await sent).toBeInstanceOf(Error);
      }
      await sleep(30);
      open();
      for (let waited = 0; decisions.length < 6 && waited < 5_000; waited += 10) await sleep(10);
      expect(decisions.filter((d) => d === 'new')).toHaveLength(3);
      expect(decisions.filter((d) => d === 'done')).toHaveLength(2);
      expect(decisions.filter((d) => d === 'released')).toHaveLength(1);
      // The failed one runs again on redelivery; the others are duplicates.
      failing = false;
      expect(await (await fetch(`${url}/value`, json({ id: '/value' }))).json()).toEqual({
        status: 'duplicate',
      });
      expect(await (await fetch(`${url}/throws`, json({ id: '/throws' }))).json()).toEqual({
        ok: true,
      });
    });

    it("a route's own preHandler that answers or throws after the claim settles it from the wire: released, and the redelivery runs", async () => {
      const decisions: string[] = [];
      let refusing = true;
      let handled = 0;
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate: gateWith(decisions), verify: false });
          const route = async () => {
            handled++;
            return { ok: true };
          };
          scope.post(
            '/refuses',
            {
              preHandler: (_request, reply, done) => {
                if (refusing) reply.code(403).send({ status: 'forbidden' });
                else done();
              },
            },
            route,
          );
          scope.post(
            '/throws',
            {
              preHandler: async () => {
                if (refusing) throw new Error('auth backend down');
              },
            },
            route,
          );
        }),
      );
      expect((await fetch(`${url}/refuses`, json({ id: 'evt_1' }))).status).toBe(403);
      expect((await fetch(`${url}/throws`, json({ id: 'evt_2' }))).status).toBe(500);
      for (let waited = 0; decisions.length < 4 && waited < 5_000; waited += 5) await sleep(5);
      expect(decisions).toEqual(['new', 'released', 'new', 'released']);
      refusing = false;
      expect((await fetch(`${url}/refuses`, json({ id: 'evt_1' }))).status).toBe(200);
      expect((await fetch(`${url}/throws`, json({ id: 'evt_2' }))).status).toBe(200);
      expect(handled).toBe(2);
    });

    it('`return reply` and a send later: the status sent settles the claim; a client gone before it leaves the claim held, never done', async () => {
      const decisions: string[] = [];
      const gate = gateWith(decisions);
      let entered = 0;
      const answers: (() => void)[] = [];
      let closed = 0; // responses the server saw close (ended, or their connection gone)
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate, verify: false });
          scope.post('/later', async (_request, reply) => {
            entered++;
            reply.raw.once('close', () => closed++);
            // Fastify's "answer later": the work goes on after the handler returns.
            answers.push(() => reply.code(500).send({ status: 'failed' }));
            return reply;
          });
        }),
      );
      const waitFor = async (done: () => boolean) => {
        for (let waited = 0; !done() && waited < 5_000; waited += 5) await sleep(5);
        expect(done()).toBe(true);
      };
      // The client stays: the 500 it gets releases the claim.
      const stays = fetch(`${url}/later`, json({ id: 'evt_stays' }));
      await waitFor(() => answers.length === 1);
      answers[0]!();
      expect((await stays).status).toBe(500);
      await waitFor(() => decisions.length === 2);
      expect(decisions).toEqual(['new', 'released']);
      // The client goes before the answer: the handler's promise resolves as the connection
      // closes, which says nothing of the work's outcome; the 500 written after it reaches
      // nobody (Fastify sends nothing once the client is gone).
      const client = new AbortController();
      const goes = fetch(`${url}/later`, { ...json({ id: 'evt_goes' }), signal: client.signal });
      await waitFor(() => answers.length === 2);
      client.abort();
      expect(await goes.catch((error: unknown) => error)).toBeInstanceOf(Error);
      // The reply's promise resolves on the close; a settle it made would be reported at once.
      await waitFor(() => closed === 2);
      await new Promise((resolve) => setImmediate(resolve));
      answers[1]!();
      await new Promise((resolve) => setImmediate(resolve));
      expect(decisions).toEqual(['new', 'released', 'new']);
      expect((await gate.inspect({ payload: { id: 'evt_goes' } })).state).toBe('processing');
      expect(entered).toBe(2);
    });

    it('`return reply.send(stream)` cut off by the client: the 200 on the wire marks the claim done', async () => {
      const decisions: string[] = [];
      const gate = gateWith(decisions);
      let streaming!: Readable;
      await start((app) =>
        app.register(async (scope) => {
          await scope.register(hookgate, { gate, verify: false });
          scope.post('/stream', async (_request, reply) => {
            streaming = new Readable({ read() {} });
            streaming.push('first chunk\n');
            return reply.code(200).send(streaming); // the rest never comes
          });
        }),
      );
      const client = new AbortController();
      const res = await fetch(`${url}/stream`, { ...json({ id: 'evt_s' }), signal: client.signal });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read(); // the first chunk arrived
      client.abort();
      for (let waited = 0; decisions.length < 2 && waited < 5_000; waited += 5) await sleep(5);
      expect(decisions).toEqual(['new', 'done']);
      streaming.destroy();
    });
  });
}

/**
 * `@hookgate/fastify` against the same Fastify route written by hand around `gate.run`, in
 * process through `app.inject()` (Fastify's whole request pipeline without a socket): each
 * operation posts a new event and reads the answer. Both apps read the body as bytes with a
 * content-type parser of their scope and run the same kind of gate (a `MemoryStore`), so the
 * ratio is the cost of the binding: the body reader under the size limit, the answers, the
 * preHandler hook and settling on the status written.
 */
import { createGate, type Gate, InvalidDeliveryError, StoreUnavailableError } from '@hookgate/core';
import { hookgate } from '@hookgate/fastify';
import { MemoryStore } from '@hookgate/memory';
import Fastify, { type FastifyInstance } from 'fastify';
import { alternate, asyncSide, type Plan, type Row, type Stats } from './measure.js';

/** Deliveries in flight at once, as concurrent requests would be. */
const CONCURRENCY = 8;

let counter = 0;

/** A Stripe-like delivery of a new event. */
function payload(): string {
  return JSON.stringify({
    id: `evt_${(counter++).toString(36)}`,
    type: 'invoice.paid',
    created: 1_700_000_000,
    data: { object: { id: 'in_1', customer: 'cus_1', total: 4200, currency: 'eur' } },
  });
}

const freshGate = (): Gate => createGate({ store: new MemoryStore(), eventId: 'id' });

/** The route guarded by the plugin. */
export async function withPlugin(gate: Gate = freshGate()): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(async (scope) => {
    await scope.register(hookgate, { gate, verify: false });
    scope.post('/webhooks', async (_request, reply) => reply.code(200).send({ ok: true }));
  });
  await app.ready();
  return app;
}

/** What a careful hand-written route does: keep the bytes, `gate.run`, map the outcome. */
export async function byHand(gate: Gate = freshGate()): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
      done(null, body),
    );
    scope.post('/webhooks', async (request, reply) => {
      try {
        const outcome = await gate.run(
          { rawBody: request.body as Buffer, headers: request.headers },
          () => ({ ok: true }),
        );
        if (outcome.status === 'processed') return reply.code(200).send(outcome.result);
        const status =
          outcome.status === 'in-flight' ? 409 : outcome.status === 'conflict' ? 422 : 200;
        return reply.code(status).send({ status: outcome.status });
      } catch (error) {
        if (error instanceof InvalidDeliveryError)
          return reply.code(400).send({ status: 'invalid' });
        if (error instanceof StoreUnavailableError) {
          return reply.code(503).send({ status: 'unavailable' });
        }
        throw error;
      }
    });
  });
  await app.ready();
  return app;
}

/** µs of this process's CPU per operation. */
const perOp = (stats: Stats) => (1e6 / stats.opsPerCpuSec).toFixed(0);

export async function fastifyBench(plan: Plan): Promise<Row[]> {
  const [plugin, manual] = await Promise.all([withPlugin(), byHand()]);
  let failed = 0;
  const call = (app: FastifyInstance) => async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/webhooks',
      payload: payload(),
      headers: { 'content-type': 'application/json' },
    });
    if (response.statusCode !== 200) failed++;
  };
  try {
    const [withBinding, hand] = await alternate(
      [asyncSide(call(plugin), CONCURRENCY), asyncSide(call(manual), CONCURRENCY)],
      plan,
    );
    return [
      {
        section: 'fastify',
        name: `Fastify: the hookgate plugin, app.inject(), ${CONCURRENCY} concurrent (MemoryStore)`,
        stats: withBinding!,
        baseline: { name: 'the same route by hand around gate.run', stats: hand! },
        target: { ratio: 0.95 },
        perCpu: true,
        note:
          `CPU per request ${perOp(withBinding!)} µs, by hand ${perOp(hand!)} µs: ` +
          `${(withBinding!.opsPerCpuSec / hand!.opsPerCpuSec).toFixed(2)}x` +
          (failed > 0 ? `; ${failed} non-200 answers` : ''),
      },
    ];
  } finally {
    await Promise.all([plugin.close(), manual.close()]);
  }
}

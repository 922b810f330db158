/**
 * `@hookgate/fetch`'s `webhookHandler()` against the same fetch handler written by hand around
 * `gate.run`, in process: each operation builds a `Request` for a new event, calls the handler
 * and reads the `Response` to its end, as a runtime would. Both sides run the same kind of gate
 * (a `MemoryStore`), so the ratio is the cost of the binding: the counted body read under the
 * size limit, the answers, and settling on the returned status.
 */
import { createGate, type Gate, InvalidDeliveryError, StoreUnavailableError } from '@hookgate/core';
import { webhookHandler } from '@hookgate/fetch';
import { MemoryStore } from '@hookgate/memory';
import { alternate, asyncSide, type Plan, type Row } from './measure.js';

/** Deliveries in flight at once, as concurrent requests would be. */
const CONCURRENCY = 8;

let counter = 0;

/** A Stripe-like delivery of a new event. */
export function delivery(): Request {
  const body = JSON.stringify({
    id: `evt_${(counter++).toString(36)}`,
    type: 'invoice.paid',
    created: 1_700_000_000,
    data: { object: { id: 'in_1', customer: 'cus_1', total: 4200, currency: 'eur' } },
  });
  return new Request('http://127.0.0.1/webhooks', {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
  });
}

const freshGate = (): Gate => createGate({ store: new MemoryStore(), eventId: 'id' });

/** The handler's own work on both sides: nothing but its answer. */
export const work = (): Response => Response.json({ ok: true });

/** What a careful hand-written route does: read the body, `gate.run`, map the outcome. */
export function byHand(gate: Gate): (request: Request) => Promise<Response> {
  return async (request) => {
    const rawBody = new Uint8Array(await request.arrayBuffer());
    try {
      const outcome = await gate.run({ rawBody, headers: request.headers }, work);
      if (outcome.status === 'processed') return outcome.result;
      const status =
        outcome.status === 'in-flight' ? 409 : outcome.status === 'conflict' ? 422 : 200;
      return Response.json({ status: outcome.status }, { status });
    } catch (error) {
      if (error instanceof InvalidDeliveryError) {
        return Response.json({ status: 'invalid' }, { status: 400 });
      }
      if (error instanceof StoreUnavailableError) {
        return Response.json({ status: 'unavailable' }, { status: 503 });
      }
      throw error;
    }
  };
}

export async function fetchBench(plan: Plan): Promise<Row[]> {
  const gated = webhookHandler({ gate: freshGate(), verify: false }, work);
  const manual = byHand(freshGate());
  let failed = 0;
  const call = (handler: (request: Request) => Promise<Response>) => async () => {
    const response = await handler(delivery());
    if (response.status !== 200) failed++;
    await response.arrayBuffer();
  };
  const [withBinding, hand] = await alternate(
    [asyncSide(call(gated), CONCURRENCY), asyncSide(call(manual), CONCURRENCY)],
    plan,
  );
  return [
    {
      section: 'fetch',
      name: `fetch handler: webhookHandler(), in process, ${CONCURRENCY} concurrent (MemoryStore)`,
      stats: withBinding!,
      baseline: { name: 'the same handler by hand around gate.run', stats: hand! },
      target: { ratio: 0.95 },
      ...(failed > 0 ? { note: `${failed} non-200 answers` } : {}),
    },
  ];
}

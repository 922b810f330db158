import { createGate } from '@hookgate/core';
import { expect, it } from 'vitest';
import { Harness, header, latch } from './harness.js';
import type { SuiteContext } from './index.js';

/** Every row of the answer table, and the options checked when the middleware is built. */
export function answers({ start, makeServer, parsedBody }: SuiteContext): void {
  it('a new event reaches the handler as the event and is marked done on a 2xx', async () => {
    const h = await start();
    const res = await h.post({ id: 'evt_1', amount: 5 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'processed', key: 'evt:evt_1' });
    expect(h.handled).toEqual([
      {
        key: 'evt:evt_1',
        source: 'event-id',
        payload: { id: 'evt_1', amount: 5 },
        // The claim the handler runs under: the store key, its owner token, the done TTL.
        lease: {
          key: expect.stringMatching(/^http-[0-9a-f-]+:evt:evt_1$/),
          token: expect.stringMatching(/^\d{16}$/),
          doneTtlMs: 86_400_000,
        },
      },
    ]);
    await h.waitFor('done');
  });

  it('a redelivery of a done event is acknowledged with 200 without running the handler', async () => {
    const h = await start();
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    await h.waitFor('done');
    const res = await h.post({ id: 'evt_1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(1);
  });

  it('a failed verification answers 401 and claims nothing', async () => {
    const h = await start();
    const res = await h.post({ id: 'evt_1' }, { signature: 'forged' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ status: 'unauthorized' });
    expect(h.handled).toHaveLength(0);
    // Reported, so that a 401 has an answer in the logs; nothing was claimed.
    expect(h.decisions.map((d) => [d.decision, d.reason])).toEqual([['unverified', 'rejected']]);
    expect(h.decisions[0]).not.toHaveProperty('key');
    // Nothing was claimed: the genuine delivery is processed.
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('a verify that throws, or resolves anything but true, answers 401 and says why in the decision', async () => {
    const thrown = new Error('bad signature');
    for (const [verify, reason] of [
      [
        () => {
          throw thrown;
        },
        'threw',
      ],
      [async () => false, 'rejected'],
      [async () => ({ id: 'evt_1', type: 'a Stripe event' }) as unknown as boolean, 'not-true'],
    ] as const) {
      const h = await start({ binding: { verify } });
      const res = await h.post({ id: 'evt_1' });
      expect(res.status).toBe(401);
      expect(await res.text()).not.toContain('bad signature');
      expect(h.decisions).toHaveLength(1);
      expect(h.decisions[0]).toMatchObject({ decision: 'unverified', reason });
      if (reason === 'threw') expect(h.decisions[0]?.error).toBe(thrown);
      else expect(h.decisions[0]).not.toHaveProperty('error');
      expect(h.handled).toHaveLength(0);
    }
  });

  it('an async verify that resolves true lets the delivery through', async () => {
    const h = await start({ binding: { verify: async () => true } });
    expect((await h.post({ id: 'evt_1' }, { signature: 'anything' })).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('verify: false is an explicit opt-out', async () => {
    const h = await start({ binding: { verify: false } });
    expect((await h.post({ id: 'evt_1' }, { signature: 'none' })).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('building the middleware without verify, or with a bad option, throws', async () => {
    const harness = new Harness();
    const build = (binding: object) =>
      (async () => makeServer({ ...harness.setup({}), options: binding as never }))();
    const gate = createGate({ store: harness.store });
    await expect(build({ gate })).rejects.toThrow(/verify/);
    await expect(build({ gate, verify: 'yes' })).rejects.toThrow(/verify/);
    await expect(build({ verify: false })).rejects.toThrow(/gate/);
    await expect(build({ gate, verify: false, inFlight: 'later' })).rejects.toThrow(/inFlight/);
    await expect(build({ gate, verify: false, limit: -1 })).rejects.toThrow(/limit/);
  });

  // Left out where the framework's own parser answers such a body first (`parsedBody`).
  if (!parsedBody)
    it('malformed JSON answers 400 and runs nothing', async () => {
      const h = await start();
      const res = await h.post('{"id": "evt_1",');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'invalid', reason: 'not-json' });
      expect(h.handled).toHaveLength(0);
      expect(h.count('invalid')).toBe(1);
    });

  if (!parsedBody)
    it('a form-encoded body (a GitHub hook whose content type is form) answers 400 and runs nothing', async () => {
      const h = await start();
      const form = `payload=${encodeURIComponent(JSON.stringify({ id: 'evt_1' }))}`;
      const res = await h.post(form, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'invalid', reason: 'not-json' });
      expect(h.handled).toHaveLength(0);
    });

  it('a delivery without an event id answers 400 when the digest fallback is off', async () => {
    const h = await start({ gate: { digestFallback: false } });
    const res = await h.post({ amount: 5 });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'invalid', reason: 'missing-id' });
    expect(h.handled).toHaveLength(0);
  });

  it('an unparseable event time answers 400 when the sequence guard is on', async () => {
    const h = await start({ gate: { sequence: true, subject: 'subject', occurredAt: 'at' } });
    const res = await h.post({ id: 'evt_1', subject: 'grant_1', at: 'last tuesday' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'invalid', reason: 'bad-timestamp' });
    expect(h.handled).toHaveLength(0);
  });

  it('a stale event is acknowledged with 200 and not applied', async () => {
    const h = await start({ gate: { sequence: true, subject: 'subject', occurredAt: 'at' } });
    const newer = { id: 'evt_2', subject: 'grant_1', at: '2024-05-02T00:00:00Z' };
    const older = { id: 'evt_1', subject: 'grant_1', at: '2024-05-01T00:00:00Z' };
    expect((await h.post(newer)).status).toBe(200);
    const res = await h.post(older);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'stale' });
    expect(h.handled.map((event) => event.key)).toEqual(['evt:evt_2']);
  });

  it('a delivery in flight elsewhere answers 409 with Retry-After', async () => {
    const h = await start({ binding: { retryAfter: 7 } });
    const hold = latch();
    h.behaviour = async () => {
      await hold.wait();
      return { status: 200, body: { status: 'processed' } };
    };
    const first = h.post({ id: 'evt_1' });
    await h.waitFor('new');
    const res = await h.post({ id: 'evt_1' });
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({ status: 'in-flight' });
    hold.open();
    expect((await first).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it("a delivery in flight elsewhere answers 200 with inFlight: 'ack'", async () => {
    const h = await start({ binding: { inFlight: 'ack' } });
    const hold = latch();
    h.behaviour = async () => {
      await hold.wait();
      return { status: 200, body: { status: 'processed' } };
    };
    const first = h.post({ id: 'evt_1' });
    await h.waitFor('new');
    const res = await h.post({ id: 'evt_1' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'in-flight' });
    hold.open();
    expect((await first).status).toBe(200);
  });

  it("another event of a subject held under the sequence guard answers 409, also with inFlight: 'ack'", async () => {
    // Nobody else would process it: acknowledged, it would be lost even when the first succeeds.
    const h = await start({
      binding: { inFlight: 'ack' },
      gate: { sequence: true, subject: 'subject', occurredAt: 'at' },
    });
    const hold = latch();
    h.behaviour = async () => {
      await hold.wait();
      return { status: 200, body: { status: 'processed' } };
    };
    const first = h.post({ id: 'evt_1', subject: 'grant_1', at: '2024-05-01T00:00:00Z' });
    await h.waitFor('new');
    const newer = { id: 'evt_2', subject: 'grant_1', at: '2024-05-02T00:00:00Z' };
    const res = await h.post(newer);
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(await res.json()).toEqual({ status: 'in-flight' });
    hold.open();
    expect((await first).status).toBe(200);
    await h.waitFor('done');
    // The provider comes back: the newer event runs.
    expect((await h.post(newer)).status).toBe(200);
    expect(h.handled.map((event) => event.key)).toEqual(['evt:evt_1', 'evt:evt_2']);
  });

  it('with fingerprint on, the same id with another body answers 422 and runs nothing; a re-serialized body is a duplicate', async () => {
    const h = await start({ gate: { fingerprint: true } });
    expect((await h.post({ id: 'evt_1', amount: 10 })).status).toBe(200);
    await h.waitFor('done');
    const conflict = await h.post({ id: 'evt_1', amount: 99 });
    expect(conflict.status).toBe(422);
    expect(conflict.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await conflict.json()).toEqual({ status: 'conflict' });
    expect(h.count('conflict')).toBe(1);
    const same = await h.post('{ "amount": 1e1, "id": "evt_1" }');
    expect(await same.json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(1);
  });

  it("with fingerprint on, another body answers 422 also with inFlight: 'ack', while the first runs and after", async () => {
    // Acknowledged, a body that is not the event's would be lost: never 'ack'ed.
    const h = await start({ gate: { fingerprint: true }, binding: { inFlight: 'ack' } });
    const hold = latch();
    h.behaviour = async () => {
      await hold.wait();
      return { status: 200, body: { status: 'processed' } };
    };
    const first = h.post({ id: 'evt_1', amount: 10 });
    await h.waitFor('new');
    expect((await h.post({ id: 'evt_1', amount: 99 })).status).toBe(422);
    hold.open();
    expect((await first).status).toBe(200);
    await h.waitFor('done');
    const after = await h.post({ id: 'evt_1', amount: 99 });
    expect(after.status).toBe(422);
    expect(await after.json()).toEqual({ status: 'conflict' });
    expect(h.count('conflict')).toBe(2);
    expect(h.handled).toHaveLength(1);
  });

  it('an unavailable store answers 503 with Retry-After, runs nothing and leaks no detail', async () => {
    const h = await start();
    h.store.down.add('claim');
    const res = await h.post({ id: 'evt_1' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ status: 'unavailable' });
    expect(text).not.toMatch(/secret-host|ECONNREFUSED/);
    expect(h.handled).toHaveLength(0);
    expect(h.count('store-unavailable')).toBe(1);
    // Once the store is back, the provider's retry is processed.
    h.store.down.clear();
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('a store that fails the sequence guard answers 503 and frees the claim', async () => {
    const h = await start({ gate: { sequence: true, subject: 'subject', occurredAt: 'at' } });
    h.store.down.add('advance');
    const delivery = { id: 'evt_1', subject: 'grant_1', at: 1_714_521_600 };
    expect((await h.post(delivery)).status).toBe(503);
    expect(h.handled).toHaveLength(0);
    h.store.down.clear();
    await expect.poll(async () => (await h.post(delivery)).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('verify sees the headers of the request', async () => {
    const seen: (string | undefined)[] = [];
    const h = await start({
      binding: {
        verify: (_raw, headers) => {
          seen.push(header(headers, 'x-provider-attempt'));
          return true;
        },
      },
    });
    await h.post({ id: 'evt_1' }, { headers: { 'X-Provider-Attempt': '3' } });
    expect(seen).toEqual(['3']);
  });
}

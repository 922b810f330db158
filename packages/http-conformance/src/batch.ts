import { expect, it } from 'vitest';
import type { Harness } from './harness.js';
import type { SuiteContext } from './index.js';

/** A gate whose bodies carry many events: a JSON array, as SendGrid's Event Webhook posts. */
const batched = { gate: { split: (payload: unknown) => payload as readonly unknown[] } };
const keys = (event: { events?: readonly { key: string }[] } | undefined) =>
  event?.events?.map((e) => e.key);
/** The decisions about one subject, in the order they were reported: `decision:key`. */
const decided = (h: Harness, subject: string) =>
  h.decisions.filter((d) => d.subject === subject).map((d) => `${d.decision}:${d.key}`);

/**
 * Bodies of many events (a gate with `split`): every event is claimed, the new ones reach the
 * handler together, and the answer is 2xx only when every event is settled for good.
 */
export function batch({ start }: SuiteContext): void {
  it('a body of many events hands the new ones on together and marks each done on a 2xx', async () => {
    const h = await start(batched);
    const res = await h.post([{ id: 'evt_a', n: 1 }, { id: 'evt_b', n: 2 }, { id: 'evt_c' }]);
    expect(res.status).toBe(200);
    expect(h.handled).toHaveLength(1);
    expect(h.handled[0]?.payload).toEqual([
      { id: 'evt_a', n: 1 },
      { id: 'evt_b', n: 2 },
      { id: 'evt_c' },
    ]);
    expect(keys(h.handled[0])).toEqual(['evt:evt_a', 'evt:evt_b', 'evt:evt_c']);
    await h.waitFor('done', 3);
  });

  it('a resent body runs only its new events; a body of done events is acknowledged as a duplicate', async () => {
    const h = await start(batched);
    expect((await h.post([{ id: 'evt_a' }, { id: 'evt_b' }])).status).toBe(200);
    await h.waitFor('done', 2);
    expect((await h.post([{ id: 'evt_b' }, { id: 'evt_c' }])).status).toBe(200);
    expect(keys(h.handled[1])).toEqual(['evt:evt_c']);
    await h.waitFor('done', 3);
    const res = await h.post([{ id: 'evt_c' }, { id: 'evt_a' }, { id: 'evt_b' }]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(2);
  });

  it('a non-2xx answer releases every event of the body, and the resent body runs them all', async () => {
    const h = await start(batched);
    h.behaviour = async () => ({ status: 500, body: { status: 'failed' } });
    expect((await h.post([{ id: 'evt_a' }, { id: 'evt_b' }])).status).toBe(500);
    await h.waitFor('released', 2);
    h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
    expect((await h.post([{ id: 'evt_a' }, { id: 'evt_b' }])).status).toBe(200);
    expect(keys(h.handled[1])).toEqual(['evt:evt_a', 'evt:evt_b']);
    await h.waitFor('done', 2);
  });

  it('an event in flight elsewhere answers 409 for the body and releases the others; the resent body runs them', async () => {
    const h = await start(batched);
    const held = await h.gate.claim({ payload: { id: 'evt_b' } });
    expect(held.acquired).toBe(true);
    const res = await h.post([{ id: 'evt_a' }, { id: 'evt_b' }]);
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(await res.json()).toEqual({ status: 'in-flight' });
    expect(h.handled).toHaveLength(0);
    await h.waitFor('released');
    await held.done();
    expect((await h.post([{ id: 'evt_a' }, { id: 'evt_b' }])).status).toBe(200);
    expect(keys(h.handled[0])).toEqual(['evt:evt_a']);
  });

  it("with inFlight: 'ack', an event in flight elsewhere does not hold the body up: the others run, and it is acknowledged", async () => {
    const h = await start({ ...batched, binding: { inFlight: 'ack' } });
    const held = await h.gate.claim({ payload: { id: 'evt_b' } });
    expect(held.acquired).toBe(true);
    const res = await h.post([{ id: 'evt_a' }, { id: 'evt_b' }]);
    expect(res.status).toBe(200);
    expect(h.handled).toHaveLength(1);
    expect(keys(h.handled[0])).toEqual(['evt:evt_a']);
    await h.waitFor('done');
    expect(h.count('released')).toBe(0);
    await held.done();
  });

  it("with inFlight: 'ack', an event whose subject another event holds still answers 409 for the body, and releases the others", async () => {
    const h = await start({
      ...batched,
      binding: { inFlight: 'ack' },
      gate: { ...batched.gate, sequence: true, subject: 'subject', occurredAt: 'at' },
    });
    const older = { id: 'evt_1', subject: 'grant_1', at: '2024-05-01T00:00:00Z' };
    const holder = await h.gate.claim({ payload: older });
    expect(holder.acquired).toBe(true);
    const body = [
      { id: 'evt_2', subject: 'grant_1', at: '2024-05-02T00:00:00Z' },
      { id: 'evt_3', subject: 'grant_2', at: '2024-05-02T00:00:00Z' },
    ];
    const res = await h.post(body);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ status: 'in-flight' });
    expect(h.handled).toHaveLength(0);
    await h.waitFor('released');
    await holder.done();
    // The provider comes back once the subject is free: both run.
    expect((await h.post(body)).status).toBe(200);
    expect(keys(h.handled[0])).toEqual(['evt:evt_2', 'evt:evt_3']);
  });

  it('a store failure answers 503 and runs nothing; the resent body runs every event', async () => {
    const h = await start(batched);
    h.store.down.add('claim');
    const res = await h.post([{ id: 'evt_a' }, { id: 'evt_b' }]);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable' });
    expect(h.handled).toHaveLength(0);
    h.store.down.clear();
    expect((await h.post([{ id: 'evt_a' }, { id: 'evt_b' }])).status).toBe(200);
    expect(keys(h.handled[0])).toEqual(['evt:evt_a', 'evt:evt_b']);
  });

  it('a body that is not an array of events is invalid (400); an empty one is acknowledged', async () => {
    const h = await start(batched);
    const res = await h.post({ id: 'evt_a' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'invalid', reason: 'not-json' });
    const empty = await h.post([]);
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(0);
  });

  it('an event repeated in one body runs once, and the body is acknowledged', async () => {
    const h = await start(batched);
    const res = await h.post([{ id: 'evt_a' }, { id: 'evt_a' }, { id: 'evt_b' }]);
    expect(res.status).toBe(200);
    expect(keys(h.handled[0])).toEqual(['evt:evt_a', 'evt:evt_b']);
    await h.waitFor('done', 2);
    expect(await (await h.post([{ id: 'evt_a' }, { id: 'evt_a' }])).json()).toEqual({
      status: 'duplicate',
    });
    expect(h.handled).toHaveLength(1);
  });

  for (const order of ['oldest first', 'newest first'] as const) {
    it(`under the sequence guard, a body's events of one subject (${order}): the newest runs, the others are stale`, async () => {
      const h = await start({
        gate: { ...batched.gate, sequence: true, subject: 'subject', occurredAt: 'at' },
      });
      const older = { id: 'evt_1', subject: 'grant_1', at: '2024-05-01T00:00:00Z' };
      const newer = { id: 'evt_2', subject: 'grant_1', at: '2024-05-02T00:00:00Z' };
      const other = { id: 'evt_3', subject: 'grant_2', at: '2024-05-01T00:00:00Z' };
      const body = order === 'oldest first' ? [older, newer, other] : [newer, older, other];
      const res = await h.post(body);
      expect(res.status).toBe(200);
      expect(h.handled).toHaveLength(1);
      expect(keys(h.handled[0])?.sort()).toEqual(['evt:evt_2', 'evt:evt_3']);
      await h.waitFor('done', 2);
      expect(h.count('stale')).toBe(1);
      // Oldest first, the event that first took the subject was not the newest: it is reported
      // new, then released and stale.
      const steps =
        order === 'oldest first'
          ? ['new:evt:evt_1', 'in-flight:evt:evt_2', 'released:evt:evt_1', 'new:evt:evt_2']
          : ['new:evt:evt_2'];
      expect(decided(h, 'grant_1')).toEqual([...steps, 'stale:evt:evt_1', 'done:evt:evt_2']);
      // The resent body: every event settled for good.
      expect(await (await h.post(body)).json()).toEqual({ status: 'duplicate' });
      expect(await (await h.post([older])).json()).toEqual({ status: 'duplicate' });
      expect(h.handled).toHaveLength(1);
    });
  }

  /** Two events of one subject stamped alike, and one of another subject. */
  const tied = [
    { id: 'evt_1', subject: 'grant_1', at: '2024-05-01T00:00:00Z' },
    { id: 'evt_2', subject: 'grant_1', at: '2024-05-01T00:00:00Z' },
    { id: 'evt_3', subject: 'grant_2', at: '2024-05-01T00:00:00Z' },
  ];
  const tiedKeys = ['evt:evt_1', 'evt:evt_2'];

  it("under the sequence guard, a body's events of one subject on a timestamp tie: the one holding the subject runs, the other is stale (ties: 'drop')", async () => {
    const h = await start({
      gate: { ...batched.gate, sequence: true, subject: 'subject', occurredAt: 'at' },
    });
    const res = await h.post(tied);
    expect(res.status).toBe(200);
    expect(h.handled).toHaveLength(1);
    await h.waitFor('done', 2);
    // The event that took the subject first holds it: reported new, never released.
    const [first] = decided(h, 'grant_1');
    expect(first).toMatch(/^new:/);
    const holder = first!.slice('new:'.length);
    const other = tiedKeys.find((key) => key !== holder);
    expect(tiedKeys).toContain(holder);
    expect(keys(h.handled[0])?.sort()).toEqual([holder, 'evt:evt_3'].sort());
    expect(decided(h, 'grant_1')).toEqual([`new:${holder}`, `stale:${other}`, `done:${holder}`]);
    // The resent body: every event settled for good.
    expect(await (await h.post(tied)).json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(1);
  });

  it("under the sequence guard with ties: 'apply', a body's events of one subject on a timestamp tie answer 409 for the body on every attempt", async () => {
    const h = await start({
      gate: { ...batched.gate, sequence: { subject: 'subject', occurredAt: 'at', ties: 'apply' } },
    });
    for (let attempt = 1; attempt <= 3; attempt++) {
      const seen = decided(h, 'grant_1').length;
      const res = await h.post(tied);
      expect(res.status).toBe(409);
      expect(res.headers.get('retry-after')).toBe('10');
      expect(await res.json()).toEqual({ status: 'in-flight' });
      expect(h.handled).toHaveLength(0);
      await h.waitFor('released', 2 * attempt);
      // The holder is applied; the other waits for the subject, claimed again and held again;
      // then the body's claims are released.
      const steps = decided(h, 'grant_1').slice(seen);
      const holder = steps[0]?.slice('new:'.length);
      const other = tiedKeys.find((key) => key !== holder);
      expect(tiedKeys).toContain(holder);
      expect(steps).toEqual([
        `new:${holder}`,
        `in-flight:${other}`,
        `in-flight:${other}`,
        `released:${holder}`,
      ]);
    }
    expect(h.count('done')).toBe(0);
    expect(h.count('stale')).toBe(0);
  });
}

import { expect, it } from 'vitest';
import { type Harness, latch, sleep, UNANSWERED } from './harness.js';
import type { SuiteContext } from './index.js';

/** How the claim is settled from the handler's outcome. */
export function settlement({ start, network }: SuiteContext): void {
  it("a handler's non-2xx answer releases the claim, and the retry is processed", async () => {
    const h = await start();
    h.behaviour = async () => ({ status: 500, body: { status: 'try later' } });
    const failed = await h.post({ id: 'evt_1' });
    expect(failed.status).toBe(500);
    await h.waitFor('released');
    h.behaviour = async () => ({ status: 204 });
    expect((await h.post({ id: 'evt_1' })).status).toBe(204);
    await h.waitFor('done');
    expect(h.handled).toHaveLength(2);
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    expect(h.handled).toHaveLength(2);
  });

  it("a handler's thrown error goes to the framework's error handling and releases the claim", async () => {
    const h = await start();
    const boom = new Error('database is down');
    h.behaviour = async () => {
      throw boom;
    };
    const failed = await h.post({ id: 'evt_1' });
    expect(failed.status).toBe(500);
    expect(h.errors).toEqual([boom]);
    await h.waitFor('released');
    h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    expect(h.handled).toHaveLength(2);
  });

  it("with onFailure: 'retain', a failed event is acknowledged as a duplicate afterwards", async () => {
    const h = await start({ gate: { onFailure: 'retain' } });
    h.behaviour = async () => {
      throw new Error('queued for our own retry pipeline');
    };
    expect((await h.post({ id: 'evt_1' })).status).toBe(500);
    await h.waitFor('retained');
    const res = await h.post({ id: 'evt_1' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(1);
  });

  it('a claim that outlived its TTL and was taken by a redelivery is reported lost, the answer stands and nothing crashes', async () => {
    const h = await start({ gate: { claimTtlMs: 50 } });
    const hold = latch();
    let calls = 0;
    h.behaviour = async () => {
      if (++calls === 1) await hold.wait();
      return { status: 200, body: { status: 'processed' } };
    };
    const first = h.post({ id: 'evt_1' });
    await h.waitFor('new');
    // Once the claim expired, the provider's retry takes the key and is processed.
    const retry = await redeliverUntilSettled(h, { id: 'evt_1' }, 50);
    expect(await retry.json()).toEqual({ status: 'processed' });
    await h.waitFor('done');
    hold.open();
    expect((await first).status).toBe(200);
    await h.waitFor('lease-lost');
    expect(h.count('done')).toBe(1);
    expect(h.handled).toHaveLength(2);
  });

  it('a claim that outlived its TTL while nobody took the key is still recorded done', async () => {
    const h = await start({ gate: { claimTtlMs: 30 } });
    h.behaviour = async () => {
      await sleep(80);
      return { status: 200, body: { status: 'processed' } };
    };
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    await h.waitFor('done');
    expect(h.count('lease-lost')).toBe(0);
    expect(await (await h.post({ id: 'evt_1' })).json()).toEqual({ status: 'duplicate' });
    expect(h.handled).toHaveLength(1);
  });

  it('a store failure at settlement is reported, the answer stands and nothing crashes', async () => {
    const h = await start();
    h.store.down.add('done');
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    await h.waitFor('store-unavailable');
    h.store.down.add('release');
    h.behaviour = async () => ({ status: 500 });
    expect((await h.post({ id: 'evt_2' })).status).toBe(500);
    await h.waitFor('store-unavailable', 2);
  });

  for (const [operation, status] of [
    ['release', 500],
    ['done', 200],
  ] as const) {
    it(`a ${operation} the store fails ends the heartbeat: the claim expires after claimTtlMs and a redelivery runs`, async () => {
      const h = await start({ gate: { claimTtlMs: 400, heartbeat: { intervalMs: 50 } } });
      h.behaviour = async () => ({ status, body: { status: 'first' } });
      // The operation stays down (a background retry cannot land): only expiry frees the key.
      h.store.down.add(operation);
      expect((await h.post({ id: 'evt_1' })).status).toBe(status);
      await h.waitFor('store-unavailable');
      h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
      // 409 while the claim lives; it must not outlive claimTtlMs (a heartbeat would renew it).
      const res = await redeliverUntilSettled(h, { id: 'evt_1' }, 400);
      expect(await res.json()).toEqual({ status: 'processed' });
      expect(h.handled).toHaveLength(2);
    });
  }

  it('the claim settles on the status the provider received, even when the handler throws after answering', async () => {
    const h = await start();
    h.behaviour = async () => ({
      status: 200,
      body: { status: 'processed' },
      afterAnswer: 'throw',
    });
    const first = await h.post({ id: 'evt_1' });
    const received = first.status;
    await h.waitFor(received < 300 ? 'done' : 'released');
    h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
    const again = await h.post({ id: 'evt_1' });
    // A 2xx on the wire means the provider will not retry: the event is done, never run twice.
    expect(await again.json()).toEqual({ status: received < 300 ? 'duplicate' : 'processed' });
    expect(h.handled).toHaveLength(received < 300 ? 1 : 2);
  });

  it('a handler that returns without answering releases the claim (the framework answers non-2xx)', async () => {
    const h = await start();
    h.behaviour = async () => UNANSWERED;
    const first = await h.post({ id: 'evt_1' });
    expect(first.status).toBeGreaterThanOrEqual(400);
    await h.waitFor('released');
    h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
    expect(await (await h.post({ id: 'evt_1' })).json()).toEqual({ status: 'processed' });
  });

  if (!network) return;

  for (const [answer, then] of [
    [200, 'marked done'],
    [500, 'released'],
  ] as const) {
    it(`a client that disconnects mid-handler leaves no stuck claim: a later ${answer} is ${then}`, async () => {
      const h = await start();
      const hold = latch();
      let finished = false;
      h.behaviour = async () => {
        await hold.wait();
        finished = true;
        return { status: answer, body: { status: 'late' } };
      };
      const client = new AbortController();
      const request = h.post({ id: 'evt_1' }, { signal: client.signal }).catch((e) => e);
      await h.waitFor('new');
      client.abort();
      expect(await request).toBeInstanceOf(Error);
      await sleep(30); // let the server notice the closed connection
      hold.open();
      await h.waitFor(answer === 200 ? 'done' : 'released');
      expect(finished).toBe(true);
      h.behaviour = async () => ({ status: 200, body: { status: 'processed' } });
      const redelivery = await h.post({ id: 'evt_1' });
      expect(await redelivery.json()).toEqual({
        status: answer === 200 ? 'duplicate' : 'processed',
      });
    });
  }
}

/**
 * Redeliver every 25 ms while the answer is 409 (the claim is still held), for at most
 * `claimTtlMs` plus 2 s of slack for a busy machine; the first other answer is returned.
 */
async function redeliverUntilSettled(
  h: Harness,
  body: unknown,
  claimTtlMs: number,
): Promise<Response> {
  const deadline = Date.now() + claimTtlMs + 2_000;
  for (;;) {
    const res = await h.post(body);
    if (res.status !== 409 || Date.now() > deadline) return res;
    await res.body?.cancel();
    await sleep(25);
  }
}

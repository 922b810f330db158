import { expect, it } from 'vitest';
import { latch, sleep } from './harness.js';
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

  it('a claim lost before settlement is reported, the answer stands and nothing crashes', async () => {
    const h = await start({ gate: { claimTtlMs: 30 } });
    h.behaviour = async () => {
      await sleep(80);
      return { status: 200, body: { status: 'processed' } };
    };
    expect((await h.post({ id: 'evt_1' })).status).toBe(200);
    await h.waitFor('lease-lost');
    expect(h.count('done')).toBe(0);
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

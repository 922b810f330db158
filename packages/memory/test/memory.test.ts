import { createGate, StoreUnavailableError } from '@hookgate/core';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../src/index.js';

function clockedStore(maxEntries?: number) {
  let now = 0;
  const store = new MemoryStore({ now: () => now, ...(maxEntries ? { maxEntries } : {}) });
  return { store, tick: (ms: number) => (now += ms) };
}

describe('MemoryStore', () => {
  it('expires processing and done records on its clock', async () => {
    const { store, tick } = clockedStore();
    expect(await store.claim('k', 't1', 100)).toBe('acquired');
    tick(99);
    expect(await store.claim('k', 't2', 100)).toBe('processing');
    tick(1);
    expect(await store.claim('k', 't2', 100)).toBe('acquired');
    expect(await store.done('k', 't2', 50)).toBe(true);
    tick(49);
    expect(await store.claim('k', 't3', 100)).toBe('done');
    tick(1);
    expect(await store.claim('k', 't3', 100)).toBe('acquired');
  });

  it('reclaims expired records as it is used, so memory stays bounded', async () => {
    const { store, tick } = clockedStore();
    for (let i = 0; i < 1000; i++) await store.claim(`old:${i}`, 't', 10);
    tick(11);
    for (let i = 0; i < 1000; i++) await store.claim(`new:${i}`, 't', 10_000);
    expect(store.size).toBe(1000);
  });

  it('in the steady state (one record expiring per one added) the map holds only live records', async () => {
    const { store, tick } = clockedStore();
    for (let i = 0; i < 5000; i++) {
      tick(1);
      await store.claim(`k:${i}`, 't', 1000);
    }
    expect(store.size).toBeLessThanOrEqual(1001);
  });

  it('a long-lived record ahead of short-lived ones does not hold up reclaiming them', async () => {
    const { store, tick } = clockedStore();
    await store.advance('watermark', {
      at: 1,
      eventKey: 'evt:1',
      token: 't',
      holdMs: 10,
      ttlMs: 1_000_000,
      ties: 'drop',
    });
    for (let i = 0; i < 1000; i++) await store.claim(`old:${i}`, 't', 10);
    tick(11);
    for (let i = 0; i < 1000; i++) await store.claim(`new:${i}`, 't', 10_000);
    expect(store.size).toBe(1001);
  });

  it('reclaiming never deletes a record claimed again under a key it had looked at', async () => {
    const { store, tick } = clockedStore();
    await store.claim('a', 't1', 10);
    await store.claim('b', 't1', 20);
    await store.claim('c', 't1', 30); // the reclaim cursor now waits at a
    expect(await store.release('a', 't1')).toBe(true);
    expect(await store.claim('a', 't2', 1000)).toBe('acquired');
    tick(15);
    for (let i = 0; i < 10; i++) await store.claim(`c:${i}`, 't', 1000);
    expect(await store.claim('a', 't3', 1000)).toBe('processing');
    expect(await store.done('a', 't2', 1000)).toBe(true);
  });

  it('fails closed when full: StoreUnavailableError, and no record is evicted', async () => {
    const { store, tick } = clockedStore(3);
    for (const key of ['a', 'b', 'c']) expect(await store.claim(key, 't', 1000)).toBe('acquired');
    await expect(store.claim('d', 't', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
    const request = {
      at: 1,
      eventKey: 'e',
      token: 't',
      holdMs: 1000,
      ttlMs: 1000,
      ties: 'drop',
    } as const;
    await expect(store.advance('w', request)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.claim('a', 't2', 1000)).toBe('processing');
    tick(1000);
    expect(await store.claim('d', 't', 1000)).toBe('acquired');
  });

  it('a flood of unique ids through a gate is bounded and fails closed, not open', async () => {
    const store = new MemoryStore({ maxEntries: 500 });
    const gate = createGate({ store, eventId: 'id' });
    let processed = 0;
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      try {
        await gate.run({ payload: { id: `flood-${i}` } }, () => processed++);
      } catch (error) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        refused++;
      }
    }
    expect(processed).toBe(500);
    expect(refused).toBe(1500);
    expect(store.size).toBe(500);
    // Events already seen are still recognised while the store is full.
    expect((await gate.run({ payload: { id: 'flood-0' } }, () => processed++)).status).toBe(
      'duplicate',
    );
  });

  it('sweep() and clear() drop records', async () => {
    const { store, tick } = clockedStore();
    await store.claim('a', 't', 10);
    await store.claim('b', 't', 100);
    tick(10);
    store.sweep();
    expect(store.size).toBe(1);
    store.clear();
    expect(store.size).toBe(0);
  });

  it('refuses bad options', () => {
    expect(() => new MemoryStore({ maxEntries: 0 })).toThrow(/maxEntries/);
    expect(() => new MemoryStore({ now: 5 as unknown as () => number })).toThrow(/now/);
  });
});

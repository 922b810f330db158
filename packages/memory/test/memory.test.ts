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

  it('fails closed when full: StoreUnavailableError, and no record is evicted', async () => {
    const { store, tick } = clockedStore(3);
    for (const key of ['a', 'b', 'c']) expect(await store.claim(key, 't', 1000)).toBe('acquired');
    await expect(store.claim('d', 't', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.advance('w', 1, 'e', 1000, 'drop')).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
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

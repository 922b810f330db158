import type { AdvanceRequest, AdvanceState, ClaimStore } from '@hookgate/core';
import { describe, it } from 'vitest';
import { LONG, type SuiteContext, sleep } from './context.js';

const T = 1_700_000_000_123;

/** An advance request, held by `token` for `holdMs`. */
export function step(
  at: number,
  eventKey: string,
  token: string,
  holdMs: number,
  ttlMs = LONG,
  ties: 'drop' | 'apply' = 'drop',
): AdvanceRequest {
  return { at, eventKey, token, holdMs, ttlMs, ties };
}

/**
 * One event through the watermark, as the gate and a retrying provider would take it when the
 * event's handler is done at once: advance with a fresh token, come back while another event
 * holds the subject, and, once applied, release the hold right away. Tests of the watermark's
 * ordering rules use it, so that holds never get in their way.
 */
export async function mark(
  store: ClaimStore,
  key: string,
  at: number,
  eventKey: string,
  ttlMs: number,
  ties: 'drop' | 'apply' = 'drop',
): Promise<Exclude<AdvanceState, 'held'>> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const token = crypto.randomUUID();
    const state = await store.advance(key, step(at, eventKey, token, ttlMs, ttlMs, ties));
    if (state === 'held') {
      await sleep(attempt);
      continue;
    }
    if (state === 'applied' && !(await store.releaseHold(key, token))) {
      throw new Error('releaseHold by the holder returned false');
    }
    return state;
  }
  throw new Error(`the subject stayed held: ${key}`);
}

/** `advance`: the sequence guard's atomic compare-and-advance of a subject's watermark. */
export function watermarkTests(ctx: SuiteContext): void {
  describe('watermark', () => {
    it('the first event of a subject is applied', async ({ expect }) => {
      const store = await ctx.store();
      expect(await mark(store, ctx.key('subject'), T, 'evt:a', LONG, 'drop')).toBe('applied');
    });

    it('a strictly newer event is applied, to the millisecond', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, key, T + 1, 'evt:b', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, T + 1_000_000, 'evt:c', LONG, 'drop')).toBe('applied');
    });

    it('an older event is stale and leaves the watermark where it was', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, key, T - 1, 'evt:b', LONG, 'drop')).toBe('stale');
      expect(await mark(store, key, T - 1, 'evt:b', LONG, 'apply')).toBe('stale');
      // Still at T, not T - 1: something between them is stale too.
      expect(await mark(store, key, T - 1, 'evt:c', LONG, 'drop')).toBe('stale');
      expect(await mark(store, key, T + 1, 'evt:d', LONG, 'drop')).toBe('applied');
    });

    it("an older retry of the watermark's own event is still stale", async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, key, T - 1, 'evt:a', LONG, 'drop')).toBe('stale');
    });

    it("ties: 'drop' treats another event with the same time as stale", async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, key, T, 'evt:b', LONG, 'drop')).toBe('stale');
    });

    it("ties: 'apply' lets another event with the same time through and records it", async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, key, T, 'evt:b', LONG, 'apply')).toBe('applied');
      // The watermark's event is now evt:b: evt:a is the other event at that time.
      expect(await mark(store, key, T, 'evt:b', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, T, 'evt:a', LONG, 'drop')).toBe('stale');
    });

    it('the retry of the event that set the watermark is not stale to itself', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'hookgate:evt:a', LONG, 'drop');
      expect(await mark(store, key, T, 'hookgate:evt:a', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, T, 'hookgate:evt:a', LONG, 'apply')).toBe('applied');
    });

    it('event keys containing colons are compared whole', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await mark(store, key, T, 'ns:evt:1:2', LONG, 'drop');
      expect(await mark(store, key, T, 'ns:evt:1', LONG, 'drop')).toBe('stale');
      expect(await mark(store, key, T, 'ns:evt:1:2:3', LONG, 'drop')).toBe('stale');
      expect(await mark(store, key, T, 'ns:evt:1:2', LONG, 'drop')).toBe('applied');
    });

    it('times compare as numbers, not as strings, including 0 and before 1970', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await mark(store, key, -86_400_000, 'evt:a', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, -1, 'evt:b', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, 0, 'evt:c', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, 9, 'evt:d', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, 10, 'evt:e', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, 9, 'evt:f', LONG, 'drop')).toBe('stale');
      expect(await mark(store, key, 8_640_000_000_000_000, 'evt:g', LONG, 'drop')).toBe('applied');
      expect(await mark(store, key, T, 'evt:h', LONG, 'drop')).toBe('stale');
    });

    it('subjects are independent', async ({ expect }) => {
      const store = await ctx.store();
      const first = ctx.key('subject');
      const second = ctx.key('subject');
      await mark(store, first, T, 'evt:a', LONG, 'drop');
      expect(await mark(store, second, T - 1, 'evt:b', LONG, 'drop')).toBe('applied');
    });

    it('concurrent advances on separate stores end at the newest event', async ({ expect }) => {
      const stores = await ctx.stores();
      for (let round = 0; round < 10; round++) {
        const key = ctx.key('subject');
        const times = stores.map((_, i) => T + ((i * 7 + round) % stores.length));
        const applied = await Promise.all(
          stores.map((store, i) => mark(store, key, times[i]!, `evt:${i}`, LONG, 'drop')),
        );
        const newest = times.indexOf(Math.max(...times));
        // The newest event was applied whatever the order, and it is the watermark now.
        expect(applied[newest]).toBe('applied');
        expect(await mark(stores[0]!, key, times[newest]!, `evt:${newest}`, LONG, 'drop')).toBe(
          'applied',
        );
        expect(await mark(stores[0]!, key, times[newest]!, 'evt:other', LONG, 'drop')).toBe(
          'stale',
        );
      }
    });

    it("of concurrent events with the same time under ties: 'drop', exactly one applies", async ({
      expect,
    }) => {
      const stores = await ctx.stores();
      for (let round = 0; round < 10; round++) {
        const key = ctx.key('subject');
        const applied = await Promise.all(
          stores.map((store, i) => mark(store, key, T, `evt:${i}`, LONG, 'drop')),
        );
        expect(applied.filter((state) => state === 'applied')).toHaveLength(1);
      }
    });
  });
}

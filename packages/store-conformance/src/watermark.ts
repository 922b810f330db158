import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';

const T = 1_700_000_000_123;

/** `advance`: the sequence guard's atomic compare-and-advance of a subject's watermark. */
export function watermarkTests(ctx: SuiteContext): void {
  describe('watermark', () => {
    it('the first event of a subject is applied', async ({ expect }) => {
      const store = await ctx.store();
      expect(await store.advance(ctx.key('subject'), T, 'evt:a', LONG, 'drop')).toBe(true);
    });

    it('a strictly newer event is applied, to the millisecond', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(key, T + 1, 'evt:b', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, T + 1_000_000, 'evt:c', LONG, 'drop')).toBe(true);
    });

    it('an older event is stale and leaves the watermark where it was', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(key, T - 1, 'evt:b', LONG, 'drop')).toBe(false);
      expect(await store.advance(key, T - 1, 'evt:b', LONG, 'apply')).toBe(false);
      // Still at T, not T - 1: something between them is stale too.
      expect(await store.advance(key, T - 1, 'evt:c', LONG, 'drop')).toBe(false);
      expect(await store.advance(key, T + 1, 'evt:d', LONG, 'drop')).toBe(true);
    });

    it("an older retry of the watermark's own event is still stale", async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(key, T - 1, 'evt:a', LONG, 'drop')).toBe(false);
    });

    it("ties: 'drop' treats another event with the same time as stale", async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(key, T, 'evt:b', LONG, 'drop')).toBe(false);
    });

    it("ties: 'apply' lets another event with the same time through and records it", async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(key, T, 'evt:b', LONG, 'apply')).toBe(true);
      // The watermark's event is now evt:b: evt:a is the other event at that time.
      expect(await store.advance(key, T, 'evt:b', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, T, 'evt:a', LONG, 'drop')).toBe(false);
    });

    it('the retry of the event that set the watermark is not stale to itself', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'hookgate:evt:a', LONG, 'drop');
      expect(await store.advance(key, T, 'hookgate:evt:a', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, T, 'hookgate:evt:a', LONG, 'apply')).toBe(true);
    });

    it('event keys containing colons are compared whole', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      await store.advance(key, T, 'ns:evt:1:2', LONG, 'drop');
      expect(await store.advance(key, T, 'ns:evt:1', LONG, 'drop')).toBe(false);
      expect(await store.advance(key, T, 'ns:evt:1:2:3', LONG, 'drop')).toBe(false);
      expect(await store.advance(key, T, 'ns:evt:1:2', LONG, 'drop')).toBe(true);
    });

    it('times compare as numbers, not as strings, including 0 and before 1970', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await store.advance(key, -86_400_000, 'evt:a', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, -1, 'evt:b', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, 0, 'evt:c', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, 9, 'evt:d', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, 10, 'evt:e', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, 9, 'evt:f', LONG, 'drop')).toBe(false);
      expect(await store.advance(key, 8_640_000_000_000_000, 'evt:g', LONG, 'drop')).toBe(true);
      expect(await store.advance(key, T, 'evt:h', LONG, 'drop')).toBe(false);
    });

    it('subjects are independent', async ({ expect }) => {
      const store = await ctx.store();
      const first = ctx.key('subject');
      const second = ctx.key('subject');
      await store.advance(first, T, 'evt:a', LONG, 'drop');
      expect(await store.advance(second, T - 1, 'evt:b', LONG, 'drop')).toBe(true);
    });

    it('concurrent advances on separate stores end at the newest event', async ({ expect }) => {
      const stores = await ctx.stores();
      for (let round = 0; round < 10; round++) {
        const key = ctx.key('subject');
        const times = stores.map((_, i) => T + ((i * 7 + round) % stores.length));
        const applied = await Promise.all(
          stores.map((store, i) => store.advance(key, times[i]!, `evt:${i}`, LONG, 'drop')),
        );
        const newest = times.indexOf(Math.max(...times));
        // The newest event was applied whatever the order, and it is the watermark now.
        expect(applied[newest]).toBe(true);
        expect(await stores[0]!.advance(key, times[newest]!, `evt:${newest}`, LONG, 'drop')).toBe(
          true,
        );
        expect(await stores[0]!.advance(key, times[newest]!, 'evt:other', LONG, 'drop')).toBe(
          false,
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
          stores.map((store, i) => store.advance(key, T, `evt:${i}`, LONG, 'drop')),
        );
        expect(applied.filter(Boolean)).toHaveLength(1);
      }
    });
  });
}

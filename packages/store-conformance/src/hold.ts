import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';
import { step } from './watermark.js';

const T = 1_700_000_000_123;

/**
 * The subject's hold: an applied event holds its subject until it settles, so that one event
 * per subject is processed at a time (`advance`, `releaseHold`, `extendHold`).
 */
export function holdTests(ctx: SuiteContext): void {
  describe('hold', () => {
    it('an applied event holds its subject: a newer event is held, and applies once the hold is released', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const first = ctx.token();
      expect(await store.advance(key, step(T, 'evt:a', first, LONG))).toBe('applied');
      expect(await store.advance(key, step(T + 1, 'evt:b', ctx.token(), LONG))).toBe('held');
      // Held changed nothing: the watermark is still evt:a's, and evt:a still holds.
      expect(await store.releaseHold(key, ctx.token())).toBe(false);
      expect(await store.releaseHold(key, first)).toBe(true);
      expect(await store.advance(key, step(T + 1, 'evt:b', ctx.token(), LONG))).toBe('applied');
    });

    it('an older event is stale even while the subject is held', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await store.advance(key, step(T, 'evt:a', ctx.token(), LONG))).toBe('applied');
      expect(await store.advance(key, step(T - 1, 'evt:0', ctx.token(), LONG))).toBe('stale');
      expect(await store.advance(key, step(T, 'evt:b', ctx.token(), LONG))).toBe('stale');
    });

    it('the same event, claimed again by a new token, takes its own hold over', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const old = ctx.token();
      const next = ctx.token();
      expect(await store.advance(key, step(T, 'evt:a', old, LONG))).toBe('applied');
      expect(await store.advance(key, step(T, 'evt:a', next, LONG))).toBe('applied');
      // The hold is the new token's now.
      expect(await store.extendHold(key, old, LONG)).toBe(false);
      expect(await store.releaseHold(key, old)).toBe(false);
      expect(await store.extendHold(key, next, LONG)).toBe(true);
      expect(await store.releaseHold(key, next)).toBe(true);
    });

    it('releaseHold keeps the watermark: an older event stays stale', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const token = ctx.token();
      expect(await store.advance(key, step(T, 'evt:a', token, LONG))).toBe('applied');
      expect(await store.releaseHold(key, token)).toBe(true);
      expect(await store.releaseHold(key, token)).toBe(true);
      expect(await store.advance(key, step(T - 1, 'evt:0', ctx.token(), LONG))).toBe('stale');
      // The retry of the watermark's own event still applies (its handler may have failed).
      expect(await store.advance(key, step(T, 'evt:a', ctx.token(), LONG))).toBe('applied');
    });

    it('releaseHold and extendHold of a subject nobody advanced', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await store.releaseHold(key, ctx.token())).toBe(true);
      expect(await store.extendHold(key, ctx.token(), LONG)).toBe(false);
      // Neither created anything.
      expect(await store.advance(key, step(T - 5, 'evt:a', ctx.token(), LONG))).toBe('applied');
    });

    it('extendHold by another token changes nothing', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const owner = ctx.token();
      expect(await store.advance(key, step(T, 'evt:a', owner, LONG))).toBe('applied');
      expect(await store.extendHold(key, ctx.token(), LONG)).toBe(false);
      expect(await store.advance(key, step(T + 1, 'evt:b', ctx.token(), LONG))).toBe('held');
      expect(await store.releaseHold(key, owner)).toBe(true);
    });

    it('of concurrent newer events on separate stores, exactly one takes the hold', async ({
      expect,
    }) => {
      const stores = await ctx.stores();
      for (let round = 0; round < 10; round++) {
        const key = ctx.key('subject');
        const states = await Promise.all(
          stores.map((store, i) => store.advance(key, step(T + i, `evt:${i}`, ctx.token(), LONG))),
        );
        expect(states.filter((state) => state === 'applied')).toHaveLength(1);
        expect(states.filter((state) => state === 'stale' || state === 'held')).toHaveLength(
          stores.length - 1,
        );
      }
    });
  });
}

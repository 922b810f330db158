import { StoreUnavailableError } from '@hookgate/core';
import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';
import { step } from './watermark.js';

/**
 * No operation overwrites a record it does not recognise: a claim operation on a watermark key
 * or the watermark's on a claim key rejects with `StoreUnavailableError` and leaves the record.
 */
export function foreignTests(ctx: SuiteContext): void {
  describe('foreign records', () => {
    it('sequence operations on a claim record reject and leave it', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      await store.done(key, token, LONG);
      const other = ctx.token();
      for (const attempt of [
        () => store.advance(key, step(1, 'evt:a', other, LONG)),
        () => store.releaseHold(key, other),
        () => store.extendHold(key, other, LONG),
      ]) {
        await expect(attempt()).rejects.toBeInstanceOf(StoreUnavailableError);
      }
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('claim operations on a watermark reject and leave it', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const holder = ctx.token();
      expect(await store.advance(key, step(1_000, 'evt:a', holder, LONG))).toBe('applied');
      const other = ctx.token();
      for (const attempt of [
        () => store.claim(key, other, LONG),
        () => store.done(key, other, LONG),
        () => store.release(key, other),
        () => store.extend(key, other, LONG),
      ]) {
        await expect(attempt()).rejects.toBeInstanceOf(StoreUnavailableError);
      }
      expect(await store.releaseHold(key, holder)).toBe(true);
      expect(await store.advance(key, step(999, 'evt:b', other, LONG))).toBe('stale');
    });
  });
}

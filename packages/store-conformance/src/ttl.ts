import { describe, it } from 'vitest';
import {
  LONG,
  MEDIUM,
  PAST_MEDIUM,
  PAST_SHORT,
  SHORT,
  type SuiteContext,
  sleep,
} from './context.js';
import { mark, step } from './watermark.js';

/** Every record expires after its TTL, in milliseconds, and an expired record is absent. */
export function ttlTests(ctx: SuiteContext): void {
  // Concurrent: these tests mostly wait, and their keys are their own.
  describe.concurrent('ttl', () => {
    it('a processing record lives until its claim TTL passes (a losing claim does not renew it), then the key can be claimed again', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      await store.claim(key, ctx.token(), MEDIUM);
      await sleep(SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      await sleep(PAST_MEDIUM - SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('a done record lives until its done TTL passes', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      await store.done(key, token, MEDIUM);
      await sleep(SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
      await sleep(PAST_MEDIUM - SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('done replaces the claim TTL with the done TTL', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, MEDIUM);
      expect(await store.done(key, token, LONG)).toBe(true);
      await sleep(PAST_MEDIUM);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('extend resets the claim TTL: a longer one keeps the claim past its first TTL', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, MEDIUM);
      expect(await store.extend(key, token, LONG)).toBe(true);
      await sleep(PAST_MEDIUM);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      expect(await store.done(key, token, LONG)).toBe(true);
    });

    it('extend resets the claim TTL: a shorter one makes it expire sooner', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      expect(await store.extend(key, token, SHORT)).toBe(true);
      await sleep(PAST_SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('a failed extend of a done record leaves its done TTL as it was', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      await store.done(key, token, SHORT);
      expect(await store.extend(key, token, LONG)).toBe(false);
      await sleep(PAST_SHORT);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('an expired claim cannot be extended by its old owner; release frees nothing more; done still records it', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, SHORT);
      await sleep(PAST_SHORT);
      expect(await store.extend(key, token, LONG)).toBe(false);
      expect(await store.release(key, token)).toBe(true);
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('a key that expired and was claimed again belongs to the new owner only', async ({
      expect,
    }) => {
      const [a, b] = await ctx.stores(2);
      const key = ctx.key();
      const old = ctx.token();
      const next = ctx.token();
      await a!.claim(key, old, SHORT);
      await sleep(PAST_SHORT);
      expect(await b!.claim(key, next, LONG)).toBe('acquired');
      expect(await a!.done(key, old, LONG)).toBe(false);
      expect(await a!.extend(key, old, LONG)).toBe(false);
      expect(await a!.release(key, old)).toBe(false);
      expect(await a!.claim(key, ctx.token(), LONG)).toBe('processing');
      expect(await b!.done(key, next, LONG)).toBe(true);
    });

    it('a watermark expires after its TTL (a stale advance does not renew it), then any time applies', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await mark(store, key, 2_000, 'evt:a', MEDIUM)).toBe('applied');
      expect(await mark(store, key, 1_000, 'evt:b', LONG)).toBe('stale');
      await sleep(PAST_MEDIUM);
      expect(await mark(store, key, 1_000, 'evt:b', LONG)).toBe('applied');
    });

    it('an advance resets the watermark TTL; releasing the hold keeps it', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await mark(store, key, 1_000, 'evt:a', SHORT)).toBe('applied');
      expect(await mark(store, key, 2_000, 'evt:b', LONG)).toBe('applied');
      await sleep(PAST_SHORT);
      expect(await mark(store, key, 1_500, 'evt:c', LONG)).toBe('stale');
    });

    it('a hold ends after its TTL: another event of the subject then applies', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const first = ctx.token();
      expect(await store.advance(key, step(1_000, 'evt:a', first, MEDIUM))).toBe('applied');
      await sleep(SHORT);
      expect(await store.advance(key, step(2_000, 'evt:b', ctx.token(), LONG))).toBe('held');
      await sleep(PAST_MEDIUM - SHORT);
      expect(await store.advance(key, step(2_000, 'evt:b', ctx.token(), LONG))).toBe('applied');
      // The expired holder cannot extend a hold that is another's now.
      expect(await store.extendHold(key, first, LONG)).toBe(false);
    });

    it('extendHold resets the hold: the subject stays held past its first TTL', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const token = ctx.token();
      expect(await store.advance(key, step(1_000, 'evt:a', token, MEDIUM))).toBe('applied');
      expect(await store.extendHold(key, token, LONG)).toBe(true);
      await sleep(PAST_MEDIUM);
      expect(await store.advance(key, step(2_000, 'evt:b', ctx.token(), LONG))).toBe('held');
      expect(await store.releaseHold(key, token)).toBe(true);
      expect(await store.advance(key, step(2_000, 'evt:b', ctx.token(), LONG))).toBe('applied');
    });
  });
}

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

    it('an expired claim cannot be completed, released or extended by its old owner', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, SHORT);
      await sleep(PAST_SHORT);
      expect(await store.done(key, token, LONG)).toBe(false);
      expect(await store.extend(key, token, LONG)).toBe(false);
      expect(await store.release(key, token)).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
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
      expect(await store.advance(key, 2_000, 'evt:a', MEDIUM, 'drop')).toBe(true);
      expect(await store.advance(key, 1_000, 'evt:b', LONG, 'drop')).toBe(false);
      await sleep(PAST_MEDIUM);
      expect(await store.advance(key, 1_000, 'evt:b', LONG, 'drop')).toBe(true);
    });

    it('an advance resets the watermark TTL', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      expect(await store.advance(key, 1_000, 'evt:a', SHORT, 'drop')).toBe(true);
      expect(await store.advance(key, 2_000, 'evt:b', LONG, 'drop')).toBe(true);
      await sleep(PAST_SHORT);
      expect(await store.advance(key, 1_500, 'evt:c', LONG, 'drop')).toBe(false);
    });
  });
}

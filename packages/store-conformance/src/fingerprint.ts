import { createHash, randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';

/** A payload fingerprint, as the gate makes them: SHA-256 hex. */
const fingerprint = () => createHash('sha256').update(randomUUID()).digest('hex');

/**
 * The payload fingerprint a claim may carry: a claim of the same key with another fingerprint
 * is a conflict, decided on the record the claim itself found (processing or done).
 */
export function fingerprintTests(ctx: SuiteContext): void {
  describe('fingerprint', () => {
    it('a claim with another fingerprint than the processing record is a conflict that names the stored one', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const [first, other] = [fingerprint(), fingerprint()];
      const owner = ctx.token();
      expect(await store.claim(key, owner, LONG, first)).toBe('acquired');
      expect(await store.claim(key, ctx.token(), LONG, other)).toEqual({
        state: 'conflict',
        fingerprint: first,
      });
      // The conflict changed nothing: the owner still holds it, with its fingerprint.
      expect(await store.claim(key, ctx.token(), LONG, first)).toBe('processing');
      expect(await store.done(key, owner, LONG, first)).toBe(true);
    });

    it('the same fingerprint is no conflict: processing, then done', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const print = fingerprint();
      const owner = ctx.token();
      expect(await store.claim(key, owner, LONG, print)).toBe('acquired');
      expect(await store.claim(key, ctx.token(), LONG, print)).toBe('processing');
      expect(await store.claim(key, owner, LONG, print)).toBe('acquired'); // re-sent
      expect(await store.done(key, owner, LONG, print)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG, print)).toBe('done');
    });

    it('a done record keeps the fingerprint: another one conflicts with it', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const [print, other] = [fingerprint(), fingerprint()];
      const owner = ctx.token();
      await store.claim(key, owner, LONG, print);
      // A done without the fingerprint argument keeps the one the claim carries.
      expect(await store.done(key, owner, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG, other)).toEqual({
        state: 'conflict',
        fingerprint: print,
      });
      expect(await store.claim(key, ctx.token(), LONG, print)).toBe('done');
    });

    it('done on an absent key records the fingerprint it is given', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const [print, other] = [fingerprint(), fingerprint()];
      expect(await store.done(key, ctx.token(), LONG, print)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG, other)).toEqual({
        state: 'conflict',
        fingerprint: print,
      });
    });

    it('a record without a fingerprint never conflicts, nor does a claim without one', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const plain = ctx.key();
      const owner = ctx.token();
      await store.claim(plain, owner, LONG);
      expect(await store.claim(plain, ctx.token(), LONG, fingerprint())).toBe('processing');
      await store.done(plain, owner, LONG);
      expect(await store.claim(plain, ctx.token(), LONG, fingerprint())).toBe('done');
      const printed = ctx.key();
      await store.claim(printed, ctx.token(), LONG, fingerprint());
      expect(await store.claim(printed, ctx.token(), LONG)).toBe('processing');
    });

    it('release and extend work on a claim that carries a fingerprint', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      const print = fingerprint();
      await store.claim(key, owner, LONG, print);
      expect(await store.extend(key, ctx.token(), LONG)).toBe(false);
      expect(await store.extend(key, owner, LONG)).toBe(true);
      expect(await store.release(key, ctx.token())).toBe(false);
      expect(await store.release(key, owner)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG, fingerprint())).toBe('acquired');
    });
  });
}

import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';

/** `claim`: one atomic create-if-absent, and what a loser learns. */
export function claimTests(ctx: SuiteContext): void {
  describe('claim', () => {
    it('acquires an absent key', async ({ expect }) => {
      const store = await ctx.store();
      expect(await store.claim(ctx.key(), ctx.token(), LONG)).toBe('acquired');
    });

    it('reports processing to a second claimer while the first holds the claim', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      await store.claim(key, ctx.token(), LONG);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
    });

    it('reports done to every claimer once the owner marked it done', async ({ expect }) => {
      const [a, b] = await ctx.stores(2);
      const key = ctx.key();
      const token = ctx.token();
      await a!.claim(key, token, LONG);
      expect(await a!.done(key, token, LONG)).toBe(true);
      expect(await a!.claim(key, ctx.token(), LONG)).toBe('done');
      expect(await b!.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('leaves the live record untouched when a claim loses', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      // The loser did not take the record over: the first owner can still complete it.
      expect(await store.done(key, owner, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('acquires again for the same token: a claim re-sent after a lost reply', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      expect(await store.claim(key, token, LONG)).toBe('acquired');
      expect(await store.claim(key, token, LONG)).toBe('acquired');
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.claim(key, token, LONG)).toBe('done');
    });

    it('keeps different keys independent', async ({ expect }) => {
      const store = await ctx.store();
      const token = ctx.token();
      const first = ctx.key();
      const second = ctx.key();
      expect(await store.claim(first, token, LONG)).toBe('acquired');
      expect(await store.claim(second, token, LONG)).toBe('acquired');
      expect(await store.done(first, token, LONG)).toBe(true);
      expect(await store.claim(second, ctx.token(), LONG)).toBe('processing');
    });

    it('accepts keys with colons, braces, slashes, non-ASCII and a few hundred characters', async ({
      expect,
    }) => {
      const store = await ctx.store();
      for (const key of [
        ctx.key('hookgate:evt:evt_1Nq{tag}/x.y-z_é'),
        ctx.key('dig:' + 'f'.repeat(64)),
        ctx.key('x'.repeat(300)),
      ]) {
        const token = ctx.token();
        expect(await store.claim(key, token, LONG)).toBe('acquired');
        expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
        expect(await store.done(key, token, LONG)).toBe(true);
        expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
      }
    });

    it('lets exactly one of many concurrent claimers on separate stores acquire', async ({
      expect,
    }) => {
      const stores = await ctx.stores();
      for (let round = 0; round < 20; round++) {
        const key = ctx.key();
        const states = await Promise.all(
          stores.map((store) => store.claim(key, ctx.token(), LONG)),
        );
        expect(states.filter((state) => state === 'acquired')).toHaveLength(1);
        expect(states.filter((state) => state === 'processing')).toHaveLength(stores.length - 1);
      }
    });

    it('lets exactly one concurrent claimer acquire again after a release', async ({ expect }) => {
      const stores = await ctx.stores();
      const key = ctx.key();
      const first = ctx.token();
      await stores[0]!.claim(key, first, LONG);
      expect(await stores[0]!.release(key, first)).toBe(true);
      const tokens = stores.map(() => ctx.token());
      const states = await Promise.all(
        stores.map((store, i) => store.claim(key, tokens[i]!, LONG)),
      );
      expect(states.filter((state) => state === 'acquired')).toHaveLength(1);
      // And the winner is the one that owns it.
      const winner = states.indexOf('acquired');
      expect(await stores[0]!.done(key, tokens[winner]!, LONG)).toBe(true);
    });

    it('lets exactly one of many concurrent claimers on one store acquire', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const states = await Promise.all(
        Array.from({ length: 50 }, () => store.claim(key, ctx.token(), LONG)),
      );
      expect(states.filter((state) => state === 'acquired')).toHaveLength(1);
    });
  });
}

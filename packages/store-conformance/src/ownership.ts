import { randomUUID } from 'node:crypto';
import { createGate, StoreUnavailableError } from '@hookgate/core';
import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';

/** `done`, `release` and `extend` change a record only for the token that owns it. */
export function ownershipTests(ctx: SuiteContext): void {
  describe('ownership', () => {
    it('done by the owner turns the claim into a done record', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('done is idempotent for its owner, so a retry after a timeout is not a false loss', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it("a done the store applied but whose answer was lost: the gate's fail() after it finds the owner's done record, not a lost lease", async ({
      expect,
    }) => {
      const store = await ctx.store();
      // The store applies each done; the caller loses the answer (as a timeout after the server
      // ran the command loses it). A proxy, so that a store shared between tests is not changed;
      // it also puts the gate's keys under the suite's `keyPrefix`, as every key the suite writes.
      let lose = true;
      const under = ctx.key('gate');
      const losing = new Proxy(store, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target);
          if (typeof value !== 'function') return value;
          return async (key: string, ...rest: unknown[]) => {
            const result: unknown = await value.call(target, `${under}:${key}`, ...rest);
            if (property === 'done' && lose) throw new Error('ETIMEDOUT: the answer was lost');
            return result;
          };
        },
      });
      const decisions: string[] = [];
      const gate = createGate({
        store: losing,
        eventId: 'id',
        namespace: 'hookgate-conformance',
        doneTtlMs: LONG,
        onDecision: (d) => decisions.push(d.decision),
      });
      const delivery = { payload: { id: randomUUID() } };
      const claim = await gate.claim(delivery);
      expect(claim.acquired).toBe(true);
      const failed = await claim.done().then(undefined, (error: unknown) => error);
      expect(failed).toBeInstanceOf(StoreUnavailableError);
      lose = false;
      // What a handler's catch does with a done that threw: fail, which releases. The store
      // refuses to release a done record; the lease reads whose it is.
      await claim.fail(failed);
      expect(decisions).not.toContain('lease-lost');
      expect(decisions).not.toContain('released');
      expect(decisions.filter((d) => d === 'done')).toHaveLength(1);
      expect((await gate.inspect(delivery)).state).toBe('done');
      expect((await gate.run(delivery, () => 1)).status).toBe('duplicate');
    });

    it('done by another token fails and changes nothing', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      expect(await store.done(key, ctx.token(), LONG)).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      expect(await store.release(key, owner)).toBe(true);
    });

    it('done by another token fails on a done record too', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      await store.done(key, owner, LONG);
      expect(await store.done(key, ctx.token(), LONG)).toBe(false);
      expect(await store.done(key, owner, LONG)).toBe(true);
    });

    it('done on an absent key records done: a claim that expired while nobody took the key', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
      expect(await store.done(key, token, LONG)).toBe(true);
      expect(await store.done(key, ctx.token(), LONG)).toBe(false);
    });

    it('release by the owner deletes the claim, so the key can be claimed again', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      expect(await store.release(key, token)).toBe(true);
      // Released already: the key is absent, which is what release asks for.
      expect(await store.release(key, token)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('release by another token fails and leaves the claim to its owner', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      expect(await store.release(key, ctx.token())).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      expect(await store.done(key, owner, LONG)).toBe(true);
    });

    it('release of a done record fails, even by its owner, and keeps it done', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      await store.done(key, owner, LONG);
      expect(await store.release(key, owner)).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('release on an absent key succeeds and creates nothing', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      expect(await store.release(key, ctx.token())).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('extend succeeds for the owner only', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      expect(await store.extend(key, ctx.token(), LONG)).toBe(false);
      expect(await store.extend(key, owner, LONG)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
    });

    it('extend of a done record fails and keeps it done', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const owner = ctx.token();
      await store.claim(key, owner, LONG);
      await store.done(key, owner, LONG);
      expect(await store.extend(key, owner, LONG)).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
    });

    it('extend on an absent key fails and creates nothing', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      expect(await store.extend(key, ctx.token(), LONG)).toBe(false);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('concurrent done and release by the owner on separate stores never lose a done', async ({
      expect,
    }) => {
      const [a, b] = await ctx.stores(2);
      for (let round = 0; round < 10; round++) {
        const key = ctx.key();
        const owner = ctx.token();
        await a!.claim(key, owner, LONG);
        const [done, released] = await Promise.all([
          a!.done(key, owner, LONG),
          b!.release(key, owner),
        ]);
        // done always lands (on the claim, or on the key the release freed); a release that
        // came second finds the done record and leaves it.
        expect(done).toBe(true);
        expect(await a!.claim(key, ctx.token(), LONG)).toBe('done');
        if (!released) expect(await a!.release(key, owner)).toBe(false);
      }
    });
  });
}

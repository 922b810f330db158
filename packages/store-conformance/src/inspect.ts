import type { ClaimStore, StoredRecord } from '@hookgate/core';
import { describe, it } from 'vitest';
import { LONG, PAST_SHORT, SHORT, type SuiteContext, sleep } from './context.js';
import { step } from './watermark.js';

type Operator = Required<Pick<ClaimStore, 'inspect' | 'forget'>>;

/** `inspect` and `forget` are optional in `ClaimStore`; the suite holds a store to both. */
function operator(store: ClaimStore): Operator {
  if (typeof store.inspect !== 'function' || typeof store.forget !== 'function') {
    throw new Error(
      'the store has no inspect() or forget(): implement both (gate.inspect, gate.forget)',
    );
  }
  return store as ClaimStore & Operator;
}

/** A record's `ttlMs`: present, positive and at most the TTL it was written with. */
function ttlOf(record: StoredRecord, ttlMs: number): number {
  const left = record.kind === 'absent' ? undefined : record.ttlMs;
  if (left === undefined || !(left > 0 && left <= ttlMs)) {
    throw new Error(`expected a ttlMs in (0, ${ttlMs}], got ${JSON.stringify(record)}`);
  }
  return left;
}

/**
 * `inspect` reads a record (claim, done record or watermark) and its time left without changing
 * it; `forget` deletes it whoever owns it, so that the next claim or advance starts afresh.
 */
export function inspectTests(ctx: SuiteContext): void {
  describe('inspect and forget', () => {
    it('an absent key is absent, and forgetting it deletes nothing', async ({ expect }) => {
      const store = operator(await ctx.store());
      const key = ctx.key();
      expect(await store.inspect(key)).toEqual({ kind: 'absent' });
      expect(await store.forget(key)).toBe(false);
    });

    it('reads a claim, then its done record, with owner, fingerprint and time left', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const ops = operator(store);
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG, 'fp1');
      const processing = await ops.inspect(key);
      expect(processing).toMatchObject({ kind: 'processing', token, fingerprint: 'fp1' });
      ttlOf(processing, LONG);
      expect(await store.done(key, token, 2 * LONG)).toBe(true);
      const done = await ops.inspect(key);
      expect(done).toMatchObject({ kind: 'done', token, fingerprint: 'fp1' });
      expect(ttlOf(done, 2 * LONG)).toBeGreaterThan(LONG);
    });

    it('a record without a fingerprint has none; an all-digit token reads back', async ({
      expect,
    }) => {
      const store = await ctx.store();
      const key = ctx.key();
      await store.claim(key, '12345', LONG);
      await store.done(key, '12345', LONG);
      const record = await operator(store).inspect(key);
      expect(record).toMatchObject({ kind: 'done', token: '12345' });
      expect(record).not.toHaveProperty('fingerprint');
    });

    it('reads a watermark, held or not', async ({ expect }) => {
      const store = await ctx.store();
      const ops = operator(store);
      const key = ctx.key('subject');
      const holder = ctx.token();
      await store.advance(key, step(1_700_000_000_000, 'evt:a', holder, LONG));
      const held = await ops.inspect(key);
      expect(held).toMatchObject({ kind: 'watermark', at: 1_700_000_000_000, eventKey: 'evt:a' });
      ttlOf(held, LONG);
      await store.releaseHold(key, holder);
      expect(await ops.inspect(key)).toMatchObject({ kind: 'watermark', eventKey: 'evt:a' });
    });

    it('changes nothing: the claim keeps its owner and its deadline', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      await store.claim(key, ctx.token(), SHORT);
      expect((await operator(store).inspect(key)).kind).toBe('processing');
      expect(await store.claim(key, ctx.token(), LONG)).toBe('processing');
      await sleep(PAST_SHORT);
      expect(await operator(store).inspect(key)).toEqual({ kind: 'absent' });
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it("forgets another owner's claim: the next claim acquires, the old owner's done is refused", async ({
      expect,
    }) => {
      const [first, second] = await ctx.stores(2);
      const key = ctx.key();
      const owner = ctx.token();
      await first!.claim(key, owner, LONG);
      expect(await operator(second!).forget(key)).toBe(true);
      expect(await operator(second!).forget(key)).toBe(false);
      const next = ctx.token();
      expect(await second!.claim(key, next, LONG)).toBe('acquired');
      expect(await first!.done(key, owner, LONG)).toBe(false);
      expect(await operator(first!).inspect(key)).toMatchObject({
        kind: 'processing',
        token: next,
      });
    });

    it('forgets a done record: the event can be claimed again', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      const token = ctx.token();
      await store.claim(key, token, LONG);
      await store.done(key, token, LONG);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('done');
      expect(await operator(store).forget(key)).toBe(true);
      expect(await store.claim(key, ctx.token(), LONG)).toBe('acquired');
    });

    it('forgets a watermark: an older event applies again', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key('subject');
      const holder = ctx.token();
      await store.advance(key, step(2_000, 'evt:new', holder, LONG));
      await store.releaseHold(key, holder);
      expect(await store.advance(key, step(1_000, 'evt:old', ctx.token(), LONG))).toBe('stale');
      expect(await operator(store).forget(key)).toBe(true);
      expect(await store.advance(key, step(1_000, 'evt:old', ctx.token(), LONG))).toBe('applied');
    });

    it('an expired record is absent and not forgotten', async ({ expect }) => {
      const store = await ctx.store();
      const key = ctx.key();
      await store.claim(key, ctx.token(), SHORT);
      await sleep(PAST_SHORT);
      expect(await operator(store).forget(key)).toBe(false);
    });
  });
}

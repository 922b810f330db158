import { type ClaimStore, createGate } from '@hookgate/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from '../server.js';
import { type RedisClientVariant, type RedisDriver, tracked } from './driver.js';

/**
 * What the store sends and what it leaves in Redis, read back from the server: the record
 * formats, the round trips per delivery, the `EVAL` fallback, replies it cannot explain, and
 * that the client is left as it was. Under the plain client and every variant.
 */
export function commandTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    driver.disposeAll();
    await server?.dispose();
  });

  /**
   * Calls per command since the last reset. Redis counts the commands a script runs under
   * their own names too: `{ set: 2, get: 1, evalsha: 1 }` is one `SET` and one `EVALSHA` from
   * the client, the script having run a `GET` and a `SET`.
   */
  async function commandStats(): Promise<Record<string, number>> {
    const stats: Record<string, number> = {};
    for (const [field, value] of Object.entries(await server.info('commandstats'))) {
      const calls = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
      const name = field.replace(/^cmdstat_/, '');
      if (calls > 0 && name !== 'info' && !name.startsWith('config|')) stats[name] = calls;
    }
    return stats;
  }
  const resetStats = () => server.command('CONFIG', 'RESETSTAT');

  /**
   * Run each of the store's scripts once, so that the server has them cached (another test
   * flushes the cache) and a count sees one `EVALSHA` per script call, not the `EVAL` that
   * follows a `NOSCRIPT`.
   */
  async function cacheScripts(store: ClaimStore): Promise<void> {
    const key = `hookgate:evt:${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    await store.claim(key, token, 60_000);
    await store.extend(key, token, 60_000);
    await store.release(key, token);
    await store.done(key, token, 60_000);
    const subject = `hookgate:seq:${crypto.randomUUID()}`;
    const request = { at: 1, eventKey: key, token, holdMs: 60_000, ttlMs: 60_000 };
    await store.advance(subject, { ...request, ties: 'drop' });
    await store.extendHold(subject, token, 60_000);
    await store.releaseHold(subject, token);
  }

  const configurations: RedisClientVariant<C>[] = [
    { label: 'plain client', client: (port) => driver.client(port) },
    ...(driver.variants ?? []),
  ];
  for (const { label, client: connect, keyPrefix = '' } of configurations) {
    describe(label, () => {
      // The key as the server sees it.
      const stored = (key: string) => keyPrefix + key;
      const raw = (key: string) => server.command('GET', stored(key));
      const pttl = async (key: string) => Number(await server.command('PTTL', stored(key)));
      let store: ClaimStore;
      beforeEach(async () => {
        store = driver.store(await connect(server.port));
        await resetStats();
      });

      it('claim keys hold p:<token> while processing and d:<token> when done, with their TTLs', async () => {
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        const token = crypto.randomUUID();
        expect(await store.claim(key, token, 60_000)).toBe('acquired');
        expect(await raw(key)).toBe(`p:${token}`);
        expect(await pttl(key)).toBeGreaterThan(59_000);
        expect(await store.done(key, token, 86_400_000)).toBe(true);
        expect(await raw(key)).toBe(`d:${token}`);
        expect(await pttl(key)).toBeGreaterThan(86_399_000);
      });

      it('with a fingerprint, claim keys hold p:<token>:<fingerprint> then d:<token>:<fingerprint>, and a conflict costs no extra command', async () => {
        const gate = createGate({ store, eventId: 'id', fingerprint: true });
        const id = crypto.randomUUID();
        await gate.run({ payload: { id, amount: 1 } }, () => 'ok');
        const key = `hookgate:evt:${id}`;
        expect(await raw(key)).toMatch(/^d:\d{16}:[0-9a-f]{64}$/);
        await resetStats();
        expect((await gate.run({ payload: { id, amount: 2 } }, () => 'ok')).status).toBe(
          'conflict',
        );
        expect(await commandStats()).toEqual({ set: 1 });
        expect(await raw(key)).toMatch(/^d:/); // left as it was
      });

      it('watermark keys hold h:<holdUntil>:<token>:<at>:<eventKey> while held, then <at>:<eventKey>', async () => {
        const key = `hookgate:seq:${crypto.randomUUID()}`;
        const token = crypto.randomUUID();
        const before = Date.now();
        const request = {
          at: 1_700_000_000_123,
          eventKey: 'evt:a:b',
          token,
          ties: 'drop' as const,
        };
        expect(await store.advance(key, { ...request, holdMs: 30_000, ttlMs: 60_000 })).toBe(
          'applied',
        );
        const [, until, holder, rest] = /^h:(\d+):([^:]+):(.*)$/.exec(String(await raw(key)))!;
        expect(holder).toBe(token);
        expect(rest).toBe('1700000000123:evt:a:b');
        // The hold ends on the server's clock, 30 s from now (this machine's clock is the server's).
        expect(Number(until)).toBeGreaterThanOrEqual(before + 30_000 - 1_000);
        expect(Number(until)).toBeLessThan(Date.now() + 30_000 + 1_000);
        expect(await pttl(key)).toBeGreaterThan(59_000);
        expect(await store.releaseHold(key, token)).toBe(true);
        expect(await raw(key)).toBe('1700000000123:evt:a:b');
        expect(await pttl(key)).toBeGreaterThan(58_000);
      });

      it('a new delivery costs 2 commands, a duplicate 1, a sequenced delivery 4', async () => {
        const gate = createGate({ store, eventId: 'id' });
        const sequenced = createGate({
          store,
          eventId: 'id',
          sequence: { subject: 'subject', occurredAt: 'at' },
        });
        const id = crypto.randomUUID();
        // claim: SET; done: EVALSHA (running GET, SET).
        await gate.run({ payload: { id } }, () => 'ok');
        expect(await commandStats()).toEqual({ set: 2, get: 1, evalsha: 1 });
        await resetStats();
        // claim: SET, which finds the done record.
        expect((await gate.run({ payload: { id } }, () => 'ok')).status).toBe('duplicate');
        expect(await commandStats()).toEqual({ set: 1 });
        await resetStats();
        // claim: SET; advance: EVALSHA (TIME, GET, SET); done: EVALSHA (GET, SET);
        // releaseHold: EVALSHA (GET, SET).
        await sequenced.run(
          { payload: { id: crypto.randomUUID(), subject: crypto.randomUUID(), at: 1 } },
          () => 1,
        );
        expect(await commandStats()).toEqual({ set: 4, get: 3, evalsha: 3, time: 1 });
      });

      it('through the sequence guard, a stale delivery costs 3 commands, one whose subject is held 3', async () => {
        const sequenced = createGate({
          store,
          eventId: 'id',
          sequence: { subject: 'subject', occurredAt: 'at' },
        });
        const subject = crypto.randomUUID();
        const event = (at: number) => ({ payload: { id: crypto.randomUUID(), subject, at } });
        await sequenced.run(event(2), () => 2);
        await cacheScripts(store);
        await resetStats();
        // claim: SET; advance: EVALSHA (TIME, GET: older than the watermark, nothing written);
        // done: EVALSHA (GET, SET).
        expect((await sequenced.run(event(1), () => 1)).status).toBe('stale');
        expect(await commandStats()).toEqual({ set: 2, get: 2, evalsha: 2, time: 1 });
        const holder = await sequenced.claim(event(3));
        expect(holder.acquired).toBe(true);
        await resetStats();
        // claim: SET; advance: EVALSHA (TIME, GET: another event holds the subject, nothing
        // written); release: EVALSHA (GET, DEL).
        expect((await sequenced.run(event(4), () => 4)).status).toBe('in-flight');
        expect(await commandStats()).toEqual({ set: 1, get: 2, evalsha: 2, time: 1, del: 1 });
        await holder.done();
      });

      it('a heartbeat beat costs 1 command, 2 through the sequence guard', async () => {
        /** Wait (up to 2 s) until the stats show `evalsha` calls, then give them. */
        const statsOnce = async (evalsha: number) => {
          for (let waited = 0; ; waited += 5) {
            const stats = await commandStats();
            if ((stats.evalsha ?? 0) >= evalsha || waited > 2_000) return stats;
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        };
        const heartbeat = { intervalMs: 200 };
        const gate = createGate({ store, eventId: 'id', heartbeat });
        const sequenced = createGate({
          store,
          eventId: 'id',
          heartbeat,
          sequence: { subject: 'subject', occurredAt: 'at' },
        });
        await cacheScripts(store);
        /** A handler that counts the commands of its claim's first beat, `evalsha` scripts. */
        const firstBeat = (evalsha: number) => async () => {
          await resetStats();
          return statsOnce(evalsha);
        };
        // A beat: extend: EVALSHA (GET, PEXPIRE).
        const plain = await gate.run({ payload: { id: crypto.randomUUID() } }, firstBeat(1));
        expect(plain.status === 'processed' && plain.result).toEqual({
          evalsha: 1,
          get: 1,
          pexpire: 1,
        });
        // A beat: extendHold: EVALSHA (GET, TIME, SET, and PTTL: the watermark outlives the
        // hold, so no PEXPIRE); then extend: EVALSHA (GET, PEXPIRE).
        const guarded = await sequenced.run(
          { payload: { id: crypto.randomUUID(), subject: crypto.randomUUID(), at: 1 } },
          firstBeat(2),
        );
        expect(guarded.status === 'processed' && guarded.result).toEqual({
          evalsha: 2,
          get: 2,
          time: 1,
          set: 1,
          pttl: 1,
          pexpire: 1,
        });
      });

      it('after SCRIPT FLUSH a script is sent once by EVAL, then by EVALSHA again', async () => {
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        const token = crypto.randomUUID();
        await store.claim(key, token, 60_000);
        await server.command('SCRIPT', 'FLUSH');
        await resetStats();
        // EVALSHA is answered NOSCRIPT, then EVAL runs the script (GET, PEXPIRE) and caches it.
        expect(await store.extend(key, token, 60_000)).toBe(true);
        expect(await commandStats()).toEqual({ evalsha: 1, eval: 1, get: 1, pexpire: 1 });
        await resetStats();
        expect(await store.extend(key, token, 60_000)).toBe(true);
        expect(await commandStats()).toEqual({ evalsha: 1, get: 1, pexpire: 1 });
      });

      it('a SET re-sent with our own token (after a reconnect) still counts as acquired', async () => {
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        const token = crypto.randomUUID();
        expect(await store.claim(key, token, 60_000)).toBe('acquired');
        expect(await store.claim(key, token, 60_000)).toBe('acquired');
        expect(await store.claim(key, crypto.randomUUID(), 60_000)).toBe('processing');
      });

      it('a claim key holding a foreign value fails closed instead of guessing', async () => {
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        await server.command('SET', stored(key), 'something else');
        await expect(store.claim(key, crypto.randomUUID(), 60_000)).rejects.toMatchObject({
          name: 'StoreUnavailableError',
        });
        await server.command('DEL', stored(key));
        await server.command('HSET', stored(key), 'a', 'b');
        await expect(store.done(key, crypto.randomUUID(), 60_000)).rejects.toMatchObject({
          name: 'StoreUnavailableError',
          reason: 'foreign-value',
          cause: expect.objectContaining({ message: expect.stringMatching(/WRONGTYPE/) }),
        });
        // Another type under a claim key: the claim's SET … GET meets WRONGTYPE too.
        await expect(store.claim(key, crypto.randomUUID(), 60_000)).rejects.toMatchObject({
          reason: 'foreign-value',
        });
        expect(await server.command('HGET', stored(key), 'a')).toBe('b');
      });

      it('inspect and forget read records as redis-cli shows them, and refuse a foreign value', async () => {
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        const ops = store as Required<ClaimStore>;
        await server.command('SET', stored(key), 'd:42:abc', 'PX', '60000');
        const record = await ops.inspect(key);
        expect(record).toMatchObject({ kind: 'done', token: '42', fingerprint: 'abc' });
        expect(record.kind !== 'absent' && record.ttlMs).toBeGreaterThan(59_000);
        await server.command('SET', stored(key), '1714557600000:evt:e2');
        expect(await ops.inspect(key)).toEqual({
          kind: 'watermark',
          at: 1_714_557_600_000,
          eventKey: 'evt:e2',
        });
        await server.command('SET', stored(key), 'something else');
        for (const operation of [
          () => ops.inspect(key),
          () => ops.forget(key),
          () => store.claim(key, crypto.randomUUID(), 60_000),
        ]) {
          await expect(operation()).rejects.toMatchObject({
            name: 'StoreUnavailableError',
            reason: 'foreign-value',
          });
        }
        expect(await server.command('GET', stored(key))).toBe('something else');
        await server.command('SET', stored(key), 'p:tok');
        expect(await ops.forget(key)).toBe(true);
        expect(await server.command('EXISTS', stored(key))).toBe(0);
      });

      it('never changes the client it was given', async () => {
        const client = await connect(server.port);
        const snapshot = () => ({
          properties: new Set(Object.getOwnPropertyNames(client)),
          internals: driver.internals?.(client),
        });
        const before = snapshot();
        const own = driver.store(client);
        const key = `hookgate:evt:${crypto.randomUUID()}`;
        const token = crypto.randomUUID();
        await own.claim(key, token, 60_000);
        await own.extend(key, token, 60_000);
        await own.done(key, token, 60_000);
        await own.advance(`${key}:seq`, {
          at: 1,
          eventKey: key,
          token,
          holdMs: 60_000,
          ttlMs: 60_000,
          ties: 'drop',
        });
        await own.releaseHold(`${key}:seq`, token);
        expect(snapshot()).toEqual(before);
      });
    });
  }

  describe('options', () => {
    it('refuses a bad timeoutMs or something that is not a client', async () => {
      const client = await driver.client(server.port);
      for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(() => driver.store(client, { timeoutMs })).toThrow(/timeoutMs/);
      }
      expect(() => driver.store({} as C)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }),
      );
    });
  });
}

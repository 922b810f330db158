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

  describe('memory', () => {
    // A server of its own: the suite's other tests keep clients connected to theirs, whose
    // buffers Redis shrinks now and then, which moved these readings by up to 6 bytes a key.
    let server: RedisServer;
    beforeAll(async () => {
      server = await startRedis();
    });
    afterAll(async () => {
      await server?.dispose();
    });

    /**
     * What records cost in Redis memory, per key, over `COUNT` keys of 28-character event ids
     * (`hookgate:evt:evt_1NG8<8 hex><12 digits>`, 41 characters): `bytes`, the growth of
     * `used_memory` (hash tables included) from a server just flushed, both readings taken at
     * rest (see `usedMemory`); `usage`, the mean `MEMORY USAGE` of 100 of the keys, which counts
     * the key, its keyspace entry and its value object only (not the expiry table's entry, and a
     * shared integer as if it were its own). At the same count the hash tables are the same
     * size, so the difference between two kinds of key is exact: the bytes one costs more.
     */
    interface Cost {
      bytes: number;
      usage: number;
    }
    const COUNT = 50_000;
    const DONE_TTL_MS = 96 * 3_600_000;
    const perKey = (bytes: number) => (bytes / COUNT).toFixed(2);

    /** Names for `COUNT` keys of the shape above, under a prefix of their own. */
    function keyShape(): (i: number) => string {
      const prefix = `evt_1NG8${crypto.randomUUID().replaceAll('-', '').slice(0, 8)}`;
      return (i) => `hookgate:evt:${prefix}${String(i).padStart(12, '0')}`;
    }

    /**
     * `used_memory` once the server is at rest: no hash table in the middle of a rehash (both
     * its tables allocated), as many clients connected as at the reading it is compared with,
     * `clients` (the measuring ones are closed before a reading, their buffers freed), and the
     * same figure twice in a row. Redis allocates a command's latency histogram (24,688
     * bytes) when the command is first called, after it ran: the first `INFO` does not count
     * its own.
     */
    async function usedMemory(clients?: string): Promise<{ used: number; clients: string }> {
      let last = Number.NaN;
      for (let attempt = 0; ; attempt++) {
        const tables = String(await server.command('DEBUG', 'HTSTATS', 0));
        const info = String(await server.command('INFO', 'clients', 'memory'));
        const now = /^connected_clients:(\d+)/m.exec(info)?.[1] ?? '';
        const used = Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
        const settled = !tables.includes('rehashing') && (clients ?? now) === now;
        if (settled && used === last) return { used, clients: now };
        if (attempt === 500) throw new Error(`Redis not at rest: ${now} clients, ${tables}`);
        last = used;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }

    async function cost(
      keyOf: (i: number) => string,
      before: { used: number; clients: string },
    ): Promise<Cost> {
      const bytes = (await usedMemory(before.clients)).used - before.used;
      let usage = 0;
      for (let k = 0; k < 100; k++) {
        usage += Number(await server.command('MEMORY', 'USAGE', keyOf(k * (COUNT / 100))));
      }
      return { bytes, usage: usage / 100 };
    }

    /** Send `commands` pipelined on a connection of its own, each answered `OK`. */
    async function pipelined(commands: (string | number)[][]): Promise<void> {
      const replies = await server.pipeline(commands);
      const wrong = replies.find((reply) => reply !== 'OK');
      if (wrong !== undefined) throw new Error(`unexpected reply: ${String(wrong)}`);
    }

    /**
     * `SET <key> 1`, with `PX ttlMs` when given, written directly, 5,000 to a pipeline: the
     * floor of a key of this length. Redis shares the integers 0 to 9999 (when no LRU or LFU
     * `maxmemory-policy` is set), so the value costs no allocation.
     */
    async function floor(ttlMs?: number): Promise<Cost> {
      const ttl = ttlMs === undefined ? [] : ['PX', ttlMs];
      // The first SET allocates its latency histogram: make it before the first reading.
      await pipelined([['SET', 'hookgate:evt:warm-up', 1, ...ttl]]);
      const keyOf = keyShape();
      await server.command('FLUSHALL'); // the harness's own server
      const before = await usedMemory();
      for (let i = 0; i < COUNT; i += 5_000) {
        await pipelined(Array.from({ length: 5_000 }, (_, j) => ['SET', keyOf(i + j), 1, ...ttl]));
      }
      return cost(keyOf, before);
    }

    /** Done records written through the store (claim, then done, 500 at a time), 96-hour TTL. */
    async function doneRecords(tokenOf: () => string): Promise<Cost> {
      // The first done loads the store's script into the server's cache, and the first call of
      // each command allocates its latency histogram; FLUSHALL keeps both: make them before the
      // first reading.
      const warm = await driver.client(server.port);
      const token = tokenOf();
      await driver.store(warm).claim('hookgate:evt:warm-up', token, 300_000);
      await driver.store(warm).done('hookgate:evt:warm-up', token, DONE_TTL_MS);
      await driver.close(warm);
      const keyOf = keyShape();
      await server.command('FLUSHALL');
      const before = await usedMemory();
      const client = await driver.client(server.port);
      const store = driver.store(client);
      for (let i = 0; i < COUNT; i += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, j) => {
            const key = keyOf(i + j);
            const token = tokenOf();
            await store.claim(key, token, 300_000);
            await store.done(key, token, DONE_TTL_MS);
          }),
        );
      }
      await driver.close(client);
      return cost(keyOf, before);
    }

    it('a done record of the gate costs at most 20 bytes of Redis memory more than a key of the same length and TTL holding 1, 170 in all, 40 fewer than one with a UUID token', async () => {
      // The slow log keeps a copy of each command slower than 10 ms (a busy machine makes a few
      // EVALSHA that slow), about 500 bytes each: off while measuring.
      const [, slower] = (await server.command('CONFIG', 'GET', 'slowlog-log-slower-than')) as [
        string,
        string,
      ];
      await server.command('CONFIG', 'SET', 'slowlog-log-slower-than', -1);
      try {
        // (i) The floor: a key of the same length holding 1, without a TTL.
        const bare = await floor();
        // (ii) The same with the TTL every done record needs: its entry in the expiry table.
        const expiring = await floor(DONE_TTL_MS);
        // (iii) The gate's done record. Its tokens are 16 decimal digits: the record is the bare
        // token, an integer Redis keeps in the 16-byte object header.
        const digits = () => String(2 ** 52 + Math.floor(Math.random() * 2 ** 52));
        const compact = await doneRecords(digits);
        const uuids = await doneRecords(() => crypto.randomUUID());
        console.log(
          `[memory] bytes per key: (i) SET key 1 ${perKey(bare.bytes)}, (ii) SET key 1 PX <96 h> ${perKey(expiring.bytes)}, (iii) done record ${perKey(compact.bytes)}; iii - i ${perKey(compact.bytes - bare.bytes)}, iii - ii ${perKey(compact.bytes - expiring.bytes)}; with a UUID token ${perKey(uuids.bytes)}; MEMORY USAGE ${bare.usage}, ${expiring.usage}, ${compact.usage} and ${uuids.usage}`,
        );
        expect((compact.bytes - expiring.bytes) / COUNT).toBeLessThanOrEqual(20);
        expect(compact.bytes / COUNT).toBeLessThanOrEqual(170);
        expect(uuids.usage - compact.usage).toBeGreaterThanOrEqual(40);
      } finally {
        await server.command('FLUSHALL');
        await server.command('CONFIG', 'SET', 'slowlog-log-slower-than', slower);
      }
    });

    it('what a fingerprinted done record and a watermark cost (printed for docs/capacity.md)', async () => {
      const store = driver.store(await driver.client(server.port));
      await server.command('FLUSHALL');
      const count = 20_000;
      const fingerprint = 'f'.repeat(64);
      let before = Number((await server.info('memory'))['used_memory']);
      for (let i = 0; i < count; i += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, j) => {
            const key = `hookgate:evt:evt_1NG8Du2eZvKYlo2C${String(i + j).padStart(12, '0')}`;
            const token = String(2 ** 52 + i + j);
            await store.claim(key, token, 300_000, fingerprint);
            await store.done(key, token, 96 * 3_600_000, fingerprint);
          }),
        );
      }
      const printed = (Number((await server.info('memory'))['used_memory']) - before) / count;
      await server.command('FLUSHALL');
      before = Number((await server.info('memory'))['used_memory']);
      for (let i = 0; i < count; i += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async (_, j) => {
            const key = `hookgate:seq:cus_${String(i + j).padStart(14, '0')}`;
            const token = String(2 ** 52 + i + j);
            const eventKey = `evt:evt_1NG8Du2eZvKYlo2C${String(i + j).padStart(12, '0')}`;
            const request = {
              at: 1_700_000_000_000 + i + j,
              eventKey,
              token,
              ties: 'drop' as const,
            };
            await store.advance(key, { ...request, holdMs: 300_000, ttlMs: 30 * 86_400_000 });
            await store.releaseHold(key, token);
          }),
        );
      }
      const watermark = (Number((await server.info('memory'))['used_memory']) - before) / count;
      await server.command('FLUSHALL');
      console.log(
        `[memory] bytes per done record with a fingerprint: ${printed}; per watermark: ${watermark}`,
      );
      expect(printed).toBeLessThan(300);
      expect(watermark).toBeLessThan(300);
    });

    it('the gate writes the compact done record: the bare token', async () => {
      const store = driver.store(await driver.client(server.port));
      const gate = createGate({ store, eventId: 'id', namespace: 'compact' });
      const id = crypto.randomUUID();
      let token = '';
      await gate.run({ payload: { id } }, (event) => {
        token = event.lease!.token;
      });
      expect(token).toMatch(/^\d{16}$/);
      expect(await server.command('GET', `compact:evt:${id}`)).toBe(token);
      expect(await server.command('OBJECT', 'ENCODING', `compact:evt:${id}`)).toBe('int');
      // Still recognised as done by every operation.
      expect(await store.claim(`compact:evt:${id}`, 'another', 60_000)).toBe('done');
      expect(await store.done(`compact:evt:${id}`, token, 60_000)).toBe(true);
      expect(await store.done(`compact:evt:${id}`, 'another', 60_000)).toBe(false);
      expect(await store.release(`compact:evt:${id}`, token)).toBe(false);
      expect(await store.extend(`compact:evt:${id}`, token, 60_000)).toBe(false);
    });
  });

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

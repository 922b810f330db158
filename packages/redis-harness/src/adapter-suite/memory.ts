import { createGate } from '@hookgate/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisServer, startRedis } from '../server.js';
import { type RedisDriver, tracked } from './driver.js';

/**
 * What the store's records cost in Redis memory, per key, read from the server: done records
 * against a bare key of the same length and TTL, a watermark, and the compact done record of
 * an all-digit token.
 */
export function memoryTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  // A server of its own: the suite's other tests keep clients connected to theirs, whose
  // buffers Redis shrinks now and then, which moved these readings by up to 6 bytes a key.
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    driver.disposeAll();
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
    // The key shape of the table's other rows (41 characters), so that the rows compare.
    const keyOf = keyShape();
    let before = Number((await server.info('memory'))['used_memory']);
    for (let i = 0; i < count; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, async (_, j) => {
          const key = keyOf(i + j);
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
          const eventKey = keyOf(i + j).slice('hookgate:'.length);
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
}

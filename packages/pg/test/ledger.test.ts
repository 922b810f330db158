import { randomUUID } from 'node:crypto';
import { createGate, HookgateError, StoreUnavailableError } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { MemoryStore } from '@hookgate/memory';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PostgresLedger } from '../src/index.js';
import { creates, documentedSql, drop, pool, setupCreates, uniqueTable } from './db.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const shared = pool({ max: 10 });
const table = uniqueTable('hookgate_ledger');
const effects = uniqueTable('hookgate_effects');
const ledger = new PostgresLedger(shared, { table });
let redis: RedisServer;
let client: Redis;

beforeAll(async () => {
  await ledger.setup();
  await ledger.setup(); // safe on every start
  await shared.query(`CREATE TABLE "${effects}" (event_key text NOT NULL)`);
  redis = await startRedis();
  client = new Redis({ host: '127.0.0.1', port: redis.port });
});
afterAll(async () => {
  client?.disconnect();
  await redis?.dispose();
  await drop(shared, table, effects);
  await shared.end();
});

const effectCount = async (key: string) =>
  (await shared.query(`SELECT count(*)::int AS n FROM "${effects}" WHERE event_key = $1`, [key]))
    .rows[0].n as number;

/** The handler every test runs through the ledger: one effect row per run. */
const pay = ledger.transaction(async (event, tx) => {
  await tx.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
  return 'paid';
});

describe('PostgresLedger', () => {
  it('behind Redis: when Redis forgets the done record (a flush, a failover), the redelivery is a duplicate and the effect is not repeated', async () => {
    const namespace = `ledger-${randomUUID()}`;
    const gate = createGate({ store: new IoRedisStore(client), eventId: 'id', namespace });
    const delivery = { payload: { id: 'evt_1' } };
    const key = `${namespace}:evt:evt_1`;
    expect(await gate.run(delivery, pay)).toMatchObject({ status: 'processed', result: 'paid' });
    await redis.command('FLUSHALL'); // the harness's own server, never the shared one
    expect(await redis.command('GET', key)).toBeNull();
    expect(await gate.run(delivery, pay)).toEqual({ status: 'duplicate', key: 'evt:evt_1' });
    expect(await effectCount(key)).toBe(1);
    // And the gate recorded it done again in Redis: the next redelivery stops there.
    expect(String(await redis.command('GET', key))).toMatch(/^(d:|\d+$)/); // a done record
  });

  it('two processes whose stores do not see each other deliver one event at once: one effect, the other a duplicate', async () => {
    const namespace = `ledger-${randomUUID()}`;
    const [first, second] = [new MemoryStore(), new MemoryStore()].map((store) =>
      createGate({ store, eventId: 'id', namespace }),
    );
    const slow = ledger.transaction(async (event, tx) => {
      await tx.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
      await sleep(100); // the second transaction waits on this one's ledger row
    });
    const outcomes = await Promise.all([
      first!.run({ payload: { id: 'evt_1' } }, slow),
      second!.run({ payload: { id: 'evt_1' } }, slow),
    ]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['duplicate', 'processed']);
    expect(await effectCount(`${namespace}:evt:evt_1`)).toBe(1);
  });

  it('a second delivery that waits on a slower first one longer than timeoutMs rejects StoreUnavailableError without running the handler, its connection closed and its backend ended rather than a ROLLBACK queued behind the wait', async () => {
    const namespace = `ledger-${randomUUID()}`;
    const quickPool = pool({ max: 4 });
    const statements = new Map<object, string[]>(); // what each connection was sent
    quickPool.on('connect', (connection) => {
      const sent: string[] = [];
      statements.set(connection, sent);
      const query = connection.query.bind(connection);
      connection.query = ((...args: Parameters<typeof query>) => {
        const [text] = args as unknown[];
        sent.push(typeof text === 'string' ? text : String((text as { text: string }).text));
        return query(...args);
      }) as typeof query;
    });
    const quick = new PostgresLedger(quickPool, { table, timeoutMs: 300 });
    const [first, second] = [new MemoryStore(), new MemoryStore()].map((store) =>
      createGate({ store, eventId: 'id', namespace }),
    );
    let runs = 0;
    let holding = false;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const slow = quick.transaction(async (event, tx) => {
      runs++;
      await tx.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
      holding = true; // its ledger row too, inserted before the handler ran
      await held; // until the second delivery has answered
      return 'paid';
    });
    try {
      const processed = first!.run({ payload: { id: 'evt_1' } }, slow);
      await vi.waitFor(() => expect(holding).toBe(true));
      const waited = await second!.run({ payload: { id: 'evt_1' } }, slow).then(
        () => undefined,
        (error: unknown) => error,
      );
      // It answered while the first still holds the row its insert waits on.
      expect(waited).toBeInstanceOf(StoreUnavailableError);
      expect((waited as Error).message).toMatch(/record got no answer in time/);
      expect(statements.size).toBe(2);
      const [connection, sent] = [...statements].find(
        ([, texts]) => !texts.some((text) => text.includes(effects)),
      )!;
      expect(sent.map((text) => text.split(' ')[0])).toEqual(['BEGIN', 'INSERT']);
      // And its backend, whose insert was cancelled, has ended: it holds no connection slot
      // while the first delivery still holds the row.
      const pid = (connection as { processID: number }).processID;
      await vi.waitFor(async () => {
        const { rows } = await shared.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
        expect(rows).toEqual([]);
      });
      letGo();
      expect(await processed).toMatchObject({ status: 'processed', result: 'paid' });
      expect(runs).toBe(1);
      expect(await effectCount(`${namespace}:evt:evt_1`)).toBe(1);
      // The provider's retry finds the record.
      expect((await second!.run({ payload: { id: 'evt_1' } }, slow)).status).toBe('duplicate');
    } finally {
      letGo();
      await quickPool.end();
    }
  });

  it('a handler that throws rolls back its effects and the record: the retry runs', async () => {
    const namespace = `ledger-${randomUUID()}`;
    const gate = createGate({ store: new MemoryStore(), eventId: 'id', namespace });
    const failing = ledger.transaction(async (event, tx) => {
      await tx.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
      throw new Error('declined');
    });
    await expect(gate.run({ payload: { id: 'evt_1' } }, failing)).rejects.toThrow('declined');
    expect(await effectCount(`${namespace}:evt:evt_1`)).toBe(0);
    expect((await gate.run({ payload: { id: 'evt_1' } }, pay)).status).toBe('processed');
    expect(await effectCount(`${namespace}:evt:evt_1`)).toBe(1);
  });

  it('prune deletes the records older than asked, and a pruned event runs again', async () => {
    const namespace = `ledger-${randomUUID()}`;
    const ownTable = uniqueTable('hookgate_ledger');
    const own = new PostgresLedger(shared, { table: ownTable });
    await own.setup();
    try {
      const run = own.transaction(async () => 'ok');
      const gates = () => createGate({ store: new MemoryStore(), eventId: 'id', namespace });
      for (let i = 0; i < 3; i++) await gates().run({ payload: { id: `evt_${i}` } }, run);
      expect(await own.prune(3_600_000)).toBe(0);
      await sleep(50);
      expect(await own.prune(10)).toBe(3);
      // Forgotten everywhere (a fresh cache, a pruned ledger): it runs again.
      expect((await gates().run({ payload: { id: 'evt_0' } }, run)).status).toBe('processed');
      await expect(own.prune(0)).rejects.toThrow(/`olderThanMs`/);
    } finally {
      await drop(shared, ownTable);
    }
  });

  it('the ledger-table SQL of the docs is what setup() runs, for the default table', async () => {
    const made = await setupCreates((recording) => new PostgresLedger(recording).setup());
    expect(made.map((statement) => statement.split('(')[0])).toEqual([
      'CREATE TABLE IF NOT EXISTS hookgate_ledger',
      'CREATE INDEX IF NOT EXISTS hookgate_ledger_done_at ON hookgate_ledger',
    ]);
    expect(creates(documentedSql('hookgate_ledger'))).toEqual(made);
  });

  it('refuses to run outside gate.run, and a pool without connect', async () => {
    await expect(pay({ key: 'evt:x', source: 'event-id', payload: {} })).rejects.toThrow(
      HookgateError,
    );
    const queryOnly = { query: shared.query.bind(shared) } as never;
    expect(() => new PostgresLedger(queryOnly)).toThrow(/`pool`/);
  });
});

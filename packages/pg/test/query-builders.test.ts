/**
 * Drizzle and Kysely beside PostgresStore, as the adapter's docs show them: on the pool the store
 * uses, and inside `store.transaction` on the connection it checked out, where a lost lease rolls
 * their writes back with the rest of the transaction; and why the docs forbid a transaction of
 * the library's own on that connection.
 */
import { randomUUID } from 'node:crypto';
import { createGate, LeaseLostError } from '@hookgate/core';
import { eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, text } from 'drizzle-orm/pg-core';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.js';
import { drop, overtaken, pool, uniqueTable } from './db.js';

const shared = pool({ max: 10 });
const claims = uniqueTable();
const effectsTable = uniqueTable('hookgate_effects');

/** The effects table as Drizzle declares it. */
const effects = pgTable(effectsTable, {
  eventKey: text('event_key').notNull(),
  worker: text('worker').notNull(),
});
/** The same table as Kysely types it (its name is made per run). */
type Database = Record<string, { event_key: string; worker: string }>;

/** Drizzle and Kysely over the pool the store uses. */
const db = drizzle(shared);
const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: shared }) });
const store = new PostgresStore(db.$client, { table: claims });

/** Who wrote the effect rows of a store key. */
const effectRows = async (key: string) =>
  (await db.select().from(effects).where(eq(effects.eventKey, key))).map((row) => row.worker);

/**
 * A Kysely on the transaction's connection. Kysely checks a connection out of its pool for each
 * query and releases it after; given the `PoolClient` itself, it would hand the store's
 * connection back to the pool mid-transaction. So its pool hands out that one connection, and
 * releases and ends nothing: the store does.
 */
function kyselyOn(client: pg.PoolClient): Kysely<Database> {
  return new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => ({
          query: client.query.bind(client),
          release: () => {},
        }),
        end: async () => {},
      },
    }),
  });
}

/** An effect row written on a transaction's connection: `eventKey`, and who wrote it. */
type Write = (client: pg.PoolClient, eventKey: string, worker: string) => Promise<unknown>;

/**
 * Each library's write on the transaction's connection, and the same write in a transaction of
 * the library's own on that connection (what the docs forbid).
 */
const libraries: Record<'Drizzle' | 'Kysely', { write: Write; inItsOwnTransaction: Write }> = {
  Drizzle: {
    write: (client, eventKey, worker) =>
      drizzle(client).insert(effects).values({ eventKey, worker }),
    inItsOwnTransaction: (client, eventKey, worker) =>
      drizzle(client).transaction((tx) => tx.insert(effects).values({ eventKey, worker })),
  },
  Kysely: {
    write: (client, eventKey, worker) =>
      kyselyOn(client).insertInto(effectsTable).values({ event_key: eventKey, worker }).execute(),
    inItsOwnTransaction: (client, eventKey, worker) =>
      kyselyOn(client)
        .transaction()
        .execute((tx) =>
          tx.insertInto(effectsTable).values({ event_key: eventKey, worker }).execute(),
        ),
  },
};

/** A's write through `write`, B's in plain SQL; then who wrote the event's effect rows. */
async function afterLostLease(write: Write): Promise<{ a: unknown; rows: string[] }> {
  const { a, key } = await overtaken(
    store,
    (client, eventKey) => write(client, eventKey, 'a'),
    (client, eventKey) =>
      client.query(`INSERT INTO "${effectsTable}" VALUES ($1, 'b')`, [eventKey]),
  );
  return { a, rows: (await effectRows(key)).sort() };
}

beforeAll(async () => {
  await store.setup();
  await shared.query(
    `CREATE TABLE "${effectsTable}" (event_key text NOT NULL, worker text NOT NULL)`,
  );
});
afterAll(async () => {
  await drop(shared, claims, effectsTable);
  // kysely.destroy() would end this same pool: the pool is ended once, here.
  await shared.end();
});

describe('on the pool Drizzle and Kysely use', () => {
  it('Drizzle: the store on drizzle(pool).$client processes an event once; a redelivery is a duplicate', async () => {
    const gate = createGate({ store, eventId: 'id', namespace: `orm-${randomUUID()}` });
    const delivery = { payload: { id: 'evt_1' } };
    const handler = async (event: { lease?: { key: string } }) => {
      await db.insert(effects).values({ eventKey: event.lease!.key, worker: 'drizzle' });
      return 'paid';
    };
    const first = await gate.run(delivery, handler);
    expect(first).toMatchObject({ status: 'processed', result: 'paid' });
    expect((await gate.run(delivery, handler)).status).toBe('duplicate');
    expect(await effectRows(`${gate.namespace}:evt:evt_1`)).toEqual(['drizzle']);
  });

  it('Kysely: the store on the pool of its PostgresDialect processes an event once; a redelivery is a duplicate', async () => {
    const gate = createGate({ store, eventId: 'id', namespace: `orm-${randomUUID()}` });
    const delivery = { payload: { id: 'evt_1' } };
    const handler = async (event: { lease?: { key: string } }) => {
      await kysely
        .insertInto(effectsTable)
        .values({ event_key: event.lease!.key, worker: 'kysely' })
        .execute();
      return 'paid';
    };
    const first = await gate.run(delivery, handler);
    expect(first).toMatchObject({ status: 'processed', result: 'paid' });
    expect((await gate.run(delivery, handler)).status).toBe('duplicate');
    const rows = await kysely
      .selectFrom(effectsTable)
      .select('worker')
      .where('event_key', '=', `${gate.namespace}:evt:evt_1`)
      .execute();
    expect(rows).toEqual([{ worker: 'kysely' }]);
  });
});

describe.each(Object.entries(libraries))(
  'store.transaction, the effect written through %s',
  (_, { write, inItsOwnTransaction }) => {
    it('commits the effect with the done mark: one effect, and a redelivery is a duplicate', async () => {
      const gate = createGate({ store, eventId: 'id', namespace: `orm-${randomUUID()}` });
      const delivery = { payload: { id: 'evt_1' } };
      const outcome = await gate.run(
        delivery,
        store.transaction(async (event, client) => {
          await write(client as pg.PoolClient, event.lease!.key, 'once');
          return 'paid';
        }),
      );
      expect(outcome).toMatchObject({ status: 'processed', result: 'paid' });
      expect((await gate.run(delivery, () => 'again')).status).toBe('duplicate');
      expect(await effectRows(`${gate.namespace}:evt:evt_1`)).toEqual(['once']);
    });

    it('a worker whose lease expired mid-transaction, after another took over, rolls its effect back', async () => {
      const { a, rows } = await afterLostLease(write);
      expect(a).toBeInstanceOf(LeaseLostError);
      expect(rows).toEqual(['b']);
    });

    it("the library's own transaction on that connection commits before the fence: a lost lease keeps its effect (why the docs forbid it)", async () => {
      const { a, rows } = await afterLostLease(inItsOwnTransaction);
      expect(a).toBeInstanceOf(LeaseLostError);
      expect(rows).toEqual(['a', 'b']);
    });
  },
);

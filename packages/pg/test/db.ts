import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createGate } from '@hookgate/core';
import pg from 'pg';
import { expect } from 'vitest';
import type { PgPool, PgQueryConfig, PostgresStore } from '../src/index.js';

/** The shared server the tests use (trust auth, database `test`); never stopped by them. */
export const SHARED = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };

/**
 * A pool of the shared server (or of `port`), its errors silenced (tests make them on purpose).
 * Each connection gets an `'error'` listener of its own, as the adapter's docs advise: when a
 * backend is terminated, `pg` can emit `'error'` on a pooled connection outside any query and
 * outside the pool's idle listener, which would otherwise end the process.
 */
export function pool(options: pg.PoolConfig = {}): pg.Pool {
  const made = new pg.Pool({ ...SHARED, max: 10, ...options });
  made.on('error', () => {});
  made.on('connect', (client) => client.on('error', () => {}));
  return made;
}

/** The adapter's docs, whose setup SQL teams that run their own migrations run. */
const DOCS = readFileSync(new URL('../../../docs/adapters/postgres.md', import.meta.url), 'utf8');

/** The docs' SQL block that creates `table`. */
export function documentedSql(table: string): string {
  const documented = [...DOCS.matchAll(/```sql\n([\s\S]*?)```/g)]
    .map((match) => match[1]!)
    .find((sql) => sql.includes(`CREATE TABLE IF NOT EXISTS ${table} `));
  expect(documented, `docs/adapters/postgres.md shows the SQL of ${table}`).toBeDefined();
  return documented!;
}

/**
 * The `CREATE` statements of some SQL, in order, with whitespace normalised (runs collapsed, none
 * beside parentheses and commas) and identifiers unquoted: the docs write `hookgate_claims`
 * where the store writes `"hookgate_claims"`, the same name.
 */
export function creates(sql: string): string[] {
  return sql
    .split(';')
    .map((statement) =>
      statement
        .replaceAll('"', '')
        .replaceAll(/\s+/g, ' ')
        .replaceAll(/ ?([(),]) ?/g, '$1')
        .trim(),
    )
    .filter((statement) => statement.startsWith('CREATE '));
}

/**
 * The `CREATE` statements a `setup()` sends, recorded by a client that runs nothing:
 * `setup(recording)` builds the store or ledger over it and calls its `setup()`.
 */
export async function setupCreates(setup: (recording: PgPool) => Promise<void>): Promise<string[]> {
  let ran = '';
  const recording: PgPool = {
    query: async (query: string | PgQueryConfig) => {
      ran = typeof query === 'string' ? query : query.text;
      return { rows: [], rowCount: 0 };
    },
    connect: () => Promise.reject(new Error('setup() needs no connection of its own')),
  };
  await setup(recording);
  return creates(ran);
}

/** A table name no other test uses. */
export function uniqueTable(prefix = 'hookgate_test'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Drop the tables a test made. */
export async function drop(on: pg.Pool, ...tables: string[]): Promise<void> {
  for (const table of tables) await on.query(`DROP TABLE IF EXISTS "${table}"`);
}

/** A write on a transaction's connection, for the event's claim key. */
export type TxWrite = (client: pg.PoolClient, key: string) => Promise<unknown>;

/**
 * Worker A's lease expires mid-transaction while worker B processes the same event. A (a 300 ms
 * claim) runs `writeA` in `store.transaction` and waits there; once A's claim has expired by the
 * database clock (polled with `store.inspect`, not a fixed sleep), B runs `writeB` in a
 * transaction of its own and must process the event; then A goes on to its fence, and a third
 * delivery must be a duplicate.
 * @returns how A's run ended (its result or its error), and the event's claim key
 */
export async function overtaken(
  store: PostgresStore,
  writeA: TxWrite,
  writeB: TxWrite,
): Promise<{ a: unknown; key: string }> {
  const namespace = `fence-${randomUUID()}`;
  const gateOf = (claimTtlMs: number) =>
    createGate({ store, eventId: 'id', namespace, claimTtlMs });
  const [a, b] = [gateOf(300), gateOf(60_000)];
  const delivery = { payload: { id: 'evt_1' } };
  const key = `${namespace}:evt:evt_1`;
  let tookOver!: () => void;
  const takenOver = new Promise<void>((resolve) => (tookOver = resolve));
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => (wrote = resolve));
  const slow = a.run(
    delivery,
    store.transaction(async (event, client) => {
      await writeA(client as pg.PoolClient, event.lease!.key);
      wrote();
      await takenOver; // A's claim expires meanwhile, and B processes the event
    }),
  );
  await Promise.race([written, slow]); // A holds its claim (or failed: the checks below say so)
  await expect
    .poll(async () => (await store.inspect(key)).kind, { timeout: 10_000, interval: 25 })
    .toBe('absent');
  const second = await b.run(
    delivery,
    store.transaction((event, client) => writeB(client as pg.PoolClient, event.lease!.key)),
  );
  expect(second.status).toBe('processed');
  tookOver();
  const ended = await slow.catch((error: unknown) => error);
  expect((await b.run(delivery, () => 'again')).status).toBe('duplicate');
  return { a: ended, key };
}

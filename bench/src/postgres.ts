/**
 * PostgreSQL: `gate.run` over `PostgresStore`, and `store.transaction`, each against the least a
 * correct hand-written version needs on the same pool, in one run. Against the shared server
 * on 127.0.0.1:5432 (database `test`), in tables of its own, dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { createGate } from '@hookgate/core';
import { type PgPool, PostgresStore } from '@hookgate/pg';
import pg from 'pg';
import { alternate, asyncSide, type Plan, type Row } from './measure.js';

const CLAIM_TTL = 300_000;
const DONE_TTL = 86_400_000;

/**
 * The hand-written claim and done: an `INSERT … ON CONFLICT DO NOTHING` with an owner token
 * (no expiry check: a stale claim is never taken over), then an `UPDATE` of that row by its
 * token. Two statements, as `gate.run` sends, named and prepared as the store's are.
 */
export async function baselineRun(db: pg.Pool, table: string, id: string): Promise<void> {
  const key = `hookgate:evt:${id}`;
  const token = randomUUID();
  const claimed = await db.query(claimStatement(table, key, token));
  if (claimed.rowCount !== 1) return;
  await db.query(doneStatement(table, key, token));
}

/** The baseline's claim, a named prepared statement as the store's are. */
const claimStatement = (table: string, key: string, token: string) => ({
  name: `base_claim_${table}`,
  text: `INSERT INTO ${table} (key, kind, token, expires_at)
     VALUES ($1, 'p', $2, clock_timestamp() + $3::bigint * interval '1 millisecond')
     ON CONFLICT (key) DO NOTHING`,
  values: [key, token, CLAIM_TTL],
});

/** The baseline's done: the row updated by its token. */
const doneStatement = (table: string, key: string, token: string) => ({
  name: `base_done_${table}`,
  text: `UPDATE ${table} SET kind = 'd', expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond'
     WHERE key = $1 AND token = $2`,
  values: [key, token, DONE_TTL],
});

/**
 * The hand-written transaction: the claim as above, then `BEGIN`, the effect, the `UPDATE` of
 * the claim by its token, `COMMIT`: five statements, as `store.transaction` sends (its fence is
 * the done, so the gate's own done costs nothing).
 */
export async function baselineTransaction(
  db: pg.Pool,
  table: string,
  effects: string,
  id: string,
): Promise<void> {
  const key = `hookgate:evt:${id}`;
  const token = randomUUID();
  const claimed = await db.query(claimStatement(table, key, token));
  if (claimed.rowCount !== 1) return;
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${effects} (event_key) VALUES ($1)`, [key]);
    await client.query(doneStatement(table, key, token));
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

export async function postgresBench(plan: Plan): Promise<Row[]> {
  const db = new pg.Pool({
    host: '127.0.0.1',
    port: 5432,
    user: 'postgres',
    database: 'test',
    max: 40,
  });
  db.on('error', () => {});
  const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
  const [gateTable, baseTable, effects] = ['gate', 'base', 'effects'].map(
    (name) => `hookgate_bench_${name}_${suffix}`,
  ) as [string, string, string];
  const rows: Row[] = [];
  let n = 0;
  const nextId = () => `bench_${suffix}_${(n++).toString(36)}`;
  try {
    const store = new PostgresStore(db as unknown as PgPool, { table: gateTable });
    await store.setup();
    // The baseline's table has the store's shape, so that both write the same rows.
    await new PostgresStore(db as unknown as PgPool, { table: baseTable }).setup();
    await db.query(`CREATE TABLE ${effects} (event_key text NOT NULL)`);
    const gate = createGate({ store, eventId: 'id' });
    const handler = () => 'ok';

    for (const concurrency of [1, 32]) {
      const [run, base] = await alternate(
        [
          asyncSide(() => gate.run({ payload: { id: nextId() } }, handler), concurrency),
          asyncSide(() => baselineRun(db, baseTable, nextId()), concurrency),
        ],
        plan,
      );
      rows.push({
        section: 'PostgreSQL',
        name: `gate.run over PostgresStore, new delivery, c=${concurrency}`,
        stats: run!,
        baseline: { name: 'INSERT ON CONFLICT DO NOTHING + UPDATE', stats: base! },
        target: { ratio: 0.9 },
      });
    }

    const effect = store.transaction(async (event, client) => {
      await client.query(`INSERT INTO ${effects} (event_key) VALUES ($1)`, [event.lease!.key]);
    });
    for (const concurrency of [1, 32]) {
      const [tx, base] = await alternate(
        [
          asyncSide(() => gate.run({ payload: { id: nextId() } }, effect), concurrency),
          asyncSide(() => baselineTransaction(db, baseTable, effects, nextId()), concurrency),
        ],
        plan,
      );
      rows.push({
        section: 'PostgreSQL',
        name: `store.transaction (claim, BEGIN, effect, fence, COMMIT), c=${concurrency}`,
        stats: tx!,
        baseline: { name: 'claim + BEGIN; INSERT; UPDATE; COMMIT', stats: base! },
        target: { ratio: 0.9 },
      });
    }
  } finally {
    for (const table of [gateTable, baseTable, effects]) {
      await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    }
    await db.end();
  }
  return rows;
}

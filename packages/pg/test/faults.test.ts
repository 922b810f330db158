/**
 * Faults on the shared server that leave it running: connections terminated under the store, a
 * row lock held elsewhere past the deadline, a pool with no free connection. (A server stopped
 * and restarted mid-storm is in the reliability suite, on a private server.)
 */
import { randomUUID } from 'node:crypto';
import { createGate, StoreUnavailableError } from '@hookgate/core';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PostgresAuditLog, PostgresLedger, PostgresStore } from '../src/index.js';
import { drop, pool, uniqueTable } from './db.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const admin = pool({ max: 2 });
const table = uniqueTable();
const effects = uniqueTable('hookgate_effects');

beforeAll(async () => {
  await new PostgresStore(admin, { table }).setup();
  await admin.query(`CREATE TABLE "${effects}" (event_key text NOT NULL)`);
});
afterAll(async () => {
  await drop(admin, table, effects);
  await admin.end();
});

async function rejection(promise: Promise<unknown>): Promise<StoreUnavailableError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`resolved with ${String(value)}`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(StoreUnavailableError);
  return error as StoreUnavailableError;
}

/** A connection of `admin` in a transaction that holds `key`'s row of the claims table. */
async function holdRow(key: string): Promise<pg.PoolClient> {
  const locker = await admin.connect();
  await locker.query('BEGIN');
  await locker.query(`SELECT 1 FROM "${table}" WHERE key = $1 FOR UPDATE`, [key]);
  return locker;
}

/** A store on a pool of its own, a claim it acquired, and the claim's row held by `locker`. */
async function heldClaim(timeoutMs: number) {
  const storePool = pool({ max: 4 });
  const store = new PostgresStore(storePool, { table, timeoutMs });
  const key = `hookgate:evt:${randomUUID()}`;
  const token = randomUUID();
  expect(await store.claim(key, token, 60_000)).toBe('acquired');
  return { storePool, store, key, token, locker: await holdRow(key) };
}

/** Poll until `count` statements on the claims table wait for a lock. */
async function lockWaits(count: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [`%${table}%`],
    );
    if (rows[0].n >= count) return;
    await sleep(10);
  }
  throw new Error(`no ${count} statements waiting for a lock on ${table} within 5 s`);
}

describe('PostgresStore under faults', () => {
  it('connections terminated (pg_terminate_backend) mid-storm: failed deliveries are 503s, none hangs, and every event takes effect exactly once', async () => {
    const application = `hookgate-terminate-${randomUUID().slice(0, 8)}`;
    const storePool = pool({ max: 8, application_name: application });
    const store = new PostgresStore(storePool, { table, timeoutMs: 2_000 });
    const namespace = `terminate-${randomUUID()}`;
    const gate = createGate({ store, eventId: 'id', namespace, claimTtlMs: 2_000 });
    const handler = store.transaction(async (event, client) => {
      await client.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
      await client.query('SELECT pg_sleep(0.02)');
    });
    let unavailable = 0;
    let otherFailures = 0;
    let stop = false;
    // For the first 1.5 s of the storm, every connection of the store is terminated every 100 ms.
    const killingUntil = performance.now() + 1_500;
    const killer = (async () => {
      let kills = 0;
      while (!stop && performance.now() < killingUntil) {
        await sleep(100);
        const { rows } = await admin.query(
          'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1',
          [application],
        );
        kills += rows[0].n;
      }
      return kills;
    })();
    try {
      const events = Array.from({ length: 60 }, (_, i) => `evt_${i}`);
      await Promise.all(
        events.map(async (id) => {
          // A provider: retry until acknowledged, within a bound.
          for (let attempt = 0; attempt < 200; attempt++) {
            const started = performance.now();
            const outcome = await gate.run({ payload: { id } }, handler).catch((error) => {
              if (error instanceof StoreUnavailableError) unavailable++;
              else otherFailures++; // the handler's own query on a terminated connection
              return { status: 'failed' };
            });
            // Never a hang: a queue for 8 connections among 60 deliveries, and deadlines of 2 s.
            expect(performance.now() - started).toBeLessThan(15_000);
            if (outcome.status === 'processed' || outcome.status === 'duplicate') return;
            await sleep(30);
          }
          throw new Error(`${id} was never acknowledged`);
        }),
      );
    } finally {
      stop = true;
    }
    const kills = await killer;
    expect(kills).toBeGreaterThan(0);
    expect(unavailable + otherFailures).toBeGreaterThan(0);
    const { rows } = await admin.query(
      `SELECT event_key, count(*)::int AS n FROM "${effects}" WHERE event_key LIKE $1 GROUP BY event_key`,
      [`${namespace}:%`],
    );
    expect(rows).toHaveLength(60);
    expect(rows.filter((row) => row.n !== 1)).toEqual([]);
    await storePool.end();
  });

  it('a row lock held elsewhere past the deadline: the operation rejects at its deadline as unknown, never hangs, and may still land', async () => {
    const { storePool, store, key, token, locker } = await heldClaim(300);
    try {
      const started = performance.now();
      const error = await rejection(store.done(key, token, 60_000));
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(299);
      expect(waited).toBeLessThan(1_500);
      expect(error.message).toMatch(/no answer in time.*unknown/);
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    // The statement was not cancelled: once the lock is gone it lands (the "unknown" outcome).
    for (let i = 0; i < 100; i++) {
      const { rows } = await admin.query(`SELECT kind FROM "${table}" WHERE key = $1`, [key]);
      if (rows[0]?.kind === 'd') break;
      await sleep(20);
    }
    expect(await store.claim(key, randomUUID(), 60_000)).toBe('done');
    await storePool.end();
  });

  it('a pool with no free connection: the operation rejects at its deadline as unknown, never hangs, and the store works once one is free', async () => {
    const storePool = pool({ max: 1 });
    const store = new PostgresStore(storePool, { table, timeoutMs: 300 });
    const held = await storePool.connect(); // the pool's only connection, checked out and kept
    try {
      const started = performance.now();
      const error = await rejection(store.claim(`hookgate:evt:${randomUUID()}`, randomUUID(), 1));
      // Not a hang: ten times the deadline is far more than a loaded machine adds to it.
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(error.message).toMatch(/claim got no answer in time.*unknown/);
    } finally {
      held.release();
    }
    expect(await store.claim(`hookgate:evt:${randomUUID()}`, randomUUID(), 60_000)).toBe(
      'acquired',
    );
    await storePool.end();
  });

  it('store.transaction: a fence past its deadline sends nothing after it, closes its connection and cancels its statement, so the effect and the done are undone alike, and the redelivery runs the handler', async () => {
    const storePool = pool({ max: 4 });
    const store = new PostgresStore(storePool, { table, timeoutMs: 1_000 });
    const namespace = `fence-${randomUUID()}`;
    const gate = createGate({ store, eventId: 'id', namespace, claimTtlMs: 60_000 });
    const id = `pay_${randomUUID()}`;
    const key = `${namespace}:evt:${id}`;
    let locker: pg.PoolClient | undefined;
    const sent: string[] = []; // what the transaction's connection was sent after the effect
    let fencePid: number | undefined;
    const handler = store.transaction(async (event, client) => {
      await client.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
      if (locker !== undefined) return; // the redelivery
      // Another transaction holds the claim row as the fence is sent, until the transaction
      // has answered, then deletes the row (as a sweep of a claim that expired meanwhile
      // would): the fence's `UPDATE` of its own row then finds none.
      locker = await holdRow(key);
      fencePid = (client as pg.PoolClient & { processID: number }).processID;
      const query = client.query.bind(client);
      client.query = ((...args: Parameters<typeof query>) => {
        const [text] = args as unknown[];
        sent.push(typeof text === 'string' ? text : String((text as { text: string }).text));
        return query(...args);
      }) as typeof query;
    });
    try {
      await rejection(gate.run({ payload: { id } }, handler));
      // It answered while the row is still held: no ROLLBACK queued behind the fence; and the
      // fence's backend, its statement cancelled, has ended (its transaction uncommitted)
      // before the row is let go.
      expect(sent.map((text) => text.trim().split(/\s/)[0])).toEqual(['UPDATE']);
      await vi.waitFor(async () => {
        const { rows } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [
          fencePid,
        ]);
        expect(rows).toEqual([]);
      });
      await locker!.query(`DELETE FROM "${table}" WHERE key = $1`, [key]);
      await locker!.query('COMMIT');
    } finally {
      locker?.release();
    }
    const row = await admin.query(`SELECT kind FROM "${table}" WHERE key = $1`, [key]);
    expect(row.rows).toEqual([]);
    const count = async () =>
      (await admin.query(`SELECT count(*)::int AS n FROM "${effects}" WHERE event_key = $1`, [key]))
        .rows[0].n;
    expect(await count()).toBe(0);
    expect((await gate.run({ payload: { id } }, handler)).status).toBe('processed');
    expect(await count()).toBe(1);
    await storePool.end();
  });

  it('release: two releases of one claim waiting on its row lock (a release and the retry of it) both answer true, the key free', async () => {
    const { storePool, store, key, token, locker } = await heldClaim(5_000);
    let answers: boolean[];
    try {
      const releases = [store.release(key, token)];
      await lockWaits(1);
      releases.push(store.release(key, token));
      await lockWaits(2);
      await locker.query('COMMIT');
      answers = await Promise.all(releases);
    } finally {
      locker.release();
    }
    // The second found the row its snapshot showed gone once the first's DELETE committed: it
    // asked again, and the key is free of the claim.
    expect(answers).toEqual([true, true]);
    expect(await store.inspect(key)).toEqual({ kind: 'absent' });
    await storePool.end();
  });

  it('a refused connection is a StoreUnavailableError at once, with the cause', async () => {
    const refused = pool({ port: 1, max: 1 });
    const store = new PostgresStore(refused, { table, timeoutMs: 5_000 });
    const started = performance.now();
    const error = await rejection(store.claim(`hookgate:evt:${randomUUID()}`, randomUUID(), 1_000));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect((error.cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    await refused.end();
  });
});

describe('maintenance under a lock held elsewhere', () => {
  it('setup, sweep and prune reject at their deadline instead of hanging, and work once the lock goes', async () => {
    const own = pool({ max: 10 });
    const tables = {
      store: uniqueTable(),
      ledger: uniqueTable('hookgate_ledger'),
      log: uniqueTable('hookgate_log'),
    };
    const store = new PostgresStore(own, { table: tables.store, timeoutMs: 300 });
    const ledger = new PostgresLedger(own, { table: tables.ledger, timeoutMs: 300 });
    const log = new PostgresAuditLog(own, { table: tables.log, timeoutMs: 300 });
    const holder = await own.connect();
    try {
      await Promise.all([store.setup(), ledger.setup(), log.setup()]);
      await holder.query('BEGIN');
      const names = Object.values(tables).map((name) => `"${name}"`);
      await holder.query(`LOCK TABLE ${names.join(', ')} IN ACCESS EXCLUSIVE MODE`);
      const started = Date.now();
      // Each one's rejection is taken at once: the server's lock_timeout may end setup first.
      await Promise.all(
        [store.setup(), store.sweep(), ledger.setup(), ledger.prune(60_000), log.setup()].map(
          rejection,
        ),
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      await holder.query('COMMIT');
      await store.setup();
      expect(await store.sweep()).toBe(0);
      expect(await ledger.prune(60_000)).toBe(0);
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      holder.release();
      await log.close();
      await drop(admin, ...Object.values(tables));
      await own.end();
    }
  });

  it('a setup that cannot get its locks gives up on the server too: the claims queued behind it go on', async () => {
    const own = pool({ max: 10 });
    const name = uniqueTable();
    const store = new PostgresStore(own, { table: name, timeoutMs: 300 });
    const writer = await own.connect();
    try {
      await store.setup();
      // An open write transaction: CREATE INDEX (even IF NOT EXISTS) waits for it, and every
      // claim that comes after would queue behind that wait.
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO "${name}" (key, kind, expires_at) VALUES ('w', 'd', now())`);
      await rejection(store.setup());
      // The server gave up as well (lock_timeout): nothing of it is left waiting.
      await sleep(100);
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%CREATE INDEX IF NOT EXISTS%' AND query LIKE $1`,
        [`%${name}%`],
      );
      expect(rows[0].n).toBe(0);
      expect(await store.claim(`${name}:evt:a`, 'tok', 60_000)).toBe('acquired');
    } finally {
      await writer.query('ROLLBACK').catch(() => {});
      writer.release();
      await drop(admin, name);
      await own.end();
    }
  });

  it('a timeoutMs past what lock_timeout takes (2,147,483,647 ms) still sets up', async () => {
    const tables = [uniqueTable(), uniqueTable('hookgate_ledger'), uniqueTable('hookgate_log')];
    const long = { timeoutMs: 3_600_000_000 };
    const log = new PostgresAuditLog(admin, { table: tables[2]!, ...long });
    try {
      await new PostgresStore(admin, { table: tables[0]!, ...long }).setup();
      await new PostgresLedger(admin, { table: tables[1]!, ...long }).setup();
      await log.setup();
    } finally {
      await log.close();
      await drop(admin, ...tables);
    }
  });
});

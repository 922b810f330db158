/**
 * The decision log: every decision of a storm written in order, `record()` free even while the
 * table is locked, PostgreSQL stopped and started under a gate (a private server), the grants
 * that make the table write-once, and rows PostgreSQL would refuse.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createGate,
  type DecisionEvent,
  HookgateError,
  StoreUnavailableError,
} from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { afterAll, describe, expect, it, vi } from 'vitest';
// The private-server helper of the reliability suite (initdb/pg_ctl; never the shared server).
import { PostgresServer } from '../../reliability/src/postgres-server.js';
import { PostgresAuditLog } from '../src/index.js';
import { drop, pool, uniqueTable } from './db.js';

/** The SQL of the adapter's docs, which these tests run: the docs cannot drift from the code. */
const DOCS = readFileSync(new URL('../../../docs/adapters/postgres.md', import.meta.url), 'utf8');
const SQL_BLOCKS = [...DOCS.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!);

/** The docs' `sql` block that contains `marker`, for table `table` instead of the default. */
function docsBlock(marker: string, table = 'hookgate_decisions'): string {
  const block = SQL_BLOCKS.find((sql) => sql.includes(marker));
  if (block === undefined || !block.includes('hookgate_decisions')) {
    throw new Error(`no sql block of the decision log in the docs contains ${marker}`);
  }
  return block.replaceAll('hookgate_decisions', table);
}

/** The one statement of a docs block that contains `marker`. */
function docsStatement(marker: string, table?: string): string {
  const statement = docsBlock(marker, table)
    .split(/;\s*\n/)
    .find((sql) => sql.includes(marker));
  return statement!;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const admin = pool({ max: 4 });
const tables: string[] = [];
function table(): string {
  const name = uniqueTable('hookgate_decisions');
  tables.push(name);
  return name;
}
afterAll(async () => {
  await drop(admin, ...tables);
  await admin.end();
});

/** Poll until `check` holds, within `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}

/** Unhandled rejections while `work` runs (the log must never make one). */
async function unhandledDuring(work: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await work();
    await sleep(50);
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

const event = (i: number): DecisionEvent => ({
  decision: 'new',
  namespace: 'direct',
  key: `evt:${i}`,
  source: 'event-id',
  at: Date.now(),
});

describe('PostgresAuditLog', () => {
  it('a storm of deliveries with duplicates, conflicts, failures and invalid ones: after close(), every decision is a row, in the order the gate reported them', async () => {
    const name = table();
    const log = new PostgresAuditLog(admin, { table: name, batchSize: 50, flushIntervalMs: 20 });
    await log.setup();
    const reported: DecisionEvent[] = [];
    const gate = createGate<{ id?: string; customer: string; created: number; n: number }>({
      store: new MemoryStore(),
      eventId: 'id',
      name: 'storm',
      namespace: 'audit',
      fingerprint: true,
      subject: 'customer',
      occurredAt: 'created',
      onDecision: (decision) => {
        reported.push(decision);
        log.record(decision);
      },
    });
    const failedOnce = new Set<string>();
    const handler = async (evt: { payload: { id?: string } }) => {
      await sleep(Math.random() * 3);
      const id = evt.payload.id;
      if (id !== undefined && Number(id.slice(4)) % 7 === 0 && !failedOnce.has(id)) {
        failedOnce.add(id);
        throw new Error(`boom ${id}`);
      }
    };
    const created = Date.UTC(2026, 10, 30, 12);
    const deliveries: { id?: string; customer: string; created: number; n: number }[] = [];
    for (let i = 0; i < 200; i++) {
      const payload = { id: `evt_${i}`, customer: `cus_${i % 13}`, created: created + i, n: 0 };
      // Three deliveries of each event, and for one in ten, a fourth with another payload.
      deliveries.push(payload, payload, payload);
      if (i % 10 === 0) deliveries.push({ ...payload, n: 1 });
    }
    for (let i = 0; i < 20; i++) deliveries.push({ customer: 'cus_0', created, n: i }); // digests
    deliveries.sort(() => Math.random() - 0.5);
    const run = (payloads: typeof deliveries) =>
      Promise.allSettled(payloads.map((payload) => gate.run({ payload }, handler)));
    // And ten bodies that are not JSON: invalid.
    const unreadable = Array.from({ length: 10 }, () =>
      gate.run({ rawBody: '{not json' }, handler).catch(() => undefined),
    );
    const storm = await run(deliveries);
    await Promise.all(unreadable);
    expect(storm.filter((result) => result.status === 'rejected').length).toBe(29); // each id divisible by 7 fails once
    // The providers' redeliveries: duplicates of what was done, a new run of what failed.
    await run(deliveries.filter((payload) => payload.id !== undefined && payload.n === 0));
    await log.close();

    const decisions = new Set(reported.map((decision) => decision.decision));
    for (const kind of [
      'new',
      'done',
      'duplicate',
      'in-flight',
      'conflict',
      'released',
      'invalid',
    ]) {
      expect(decisions).toContain(kind);
    }
    expect(reported.length).toBeGreaterThan(1_000);
    expect(log.stats()).toEqual({
      written: reported.length,
      dropped: 0,
      failedBatches: 0,
      queued: 0,
    });
    const { rows } = await admin.query(
      `SELECT seq::int, decision, namespace, provider, key, source, subject, reason, error,
              duration_ms::int, fingerprints, extract(epoch FROM at) * 1000 AS at,
              extract(epoch FROM occurred_at) * 1000 AS occurred_at
       FROM "${name}" WHERE writer = $1 ORDER BY id`,
      [log.writer],
    );
    // Insertion order is the order of report: the whole sequence, so every key's too.
    expect(rows.map((row) => row.seq)).toEqual(reported.map((_, i) => i + 1));
    expect(rows.map((row) => [row.decision, row.key])).toEqual(
      reported.map((decision) => [decision.decision, decision.key ?? null]),
    );
    const byKey = (list: { key?: string | null; decision: string }[]) => {
      const map = new Map<string | null, string[]>();
      for (const { key, decision } of list) {
        map.set(key ?? null, [...(map.get(key ?? null) ?? []), decision]);
      }
      return map;
    };
    expect(byKey(rows)).toEqual(byKey(reported));
    rows.forEach((row, i) => {
      const decision = reported[i]!;
      expect(Number(row.at)).toBe(decision.at);
      expect(row.namespace).toBe('audit');
      expect(row.provider).toBe('storm');
      expect(row.source).toBe(decision.source ?? null);
      expect(row.subject).toBe(decision.subject ?? null);
      expect(row.occurred_at === null ? null : Number(row.occurred_at)).toBe(
        decision.occurredAt ?? null,
      );
      expect(row.reason).toBe(decision.reason ?? null);
      expect(row.duration_ms).toBe(decision.durationMs ?? null);
      expect(row.fingerprints).toEqual(decision.fingerprints ?? null);
    });
    // The docs' query for one event: every decision about it, in order.
    const why = docsStatement('Why was this event not processed', name)
      .replace("'evt:evt_1NG8Du2eZvKYlo2CUI79vXWy'", '$1')
      .replace("'hookgate'", '$2');
    const asked = reported.find((decision) => decision.decision === 'released')!.key!;
    const answer = await admin.query(why, [asked, 'audit']);
    expect(answer.rows.map((row) => row.decision)).toEqual(
      reported.filter((decision) => decision.key === asked).map((decision) => decision.decision),
    );
    expect(answer.rows.map((row) => row.decision)).toContain('released');
    const released = rows.find((row) => row.decision === 'released')!;
    expect(released.error).toMatch(/^Error: boom evt_\d+$/); // name and message, never a stack
    const invalid = rows.find((row) => row.decision === 'invalid')!;
    expect(invalid.key).toBeNull();
    expect(invalid.error).toMatch(/^InvalidDeliveryError: /);
  });

  it('record() only queues: 1,000 records return at once, none sends a query, while the table is locked; the INSERT that timed out is the only one sent until it answers (one connection, however long the lock lasts); all is written once when the lock goes', async () => {
    const name = table();
    const logPool = pool({ max: 4 });
    const errors: Error[] = [];
    const log = new PostgresAuditLog(logPool, {
      table: name,
      batchSize: 100,
      flushIntervalMs: 50,
      timeoutMs: 200,
      onError: (error) => errors.push(error),
    });
    await log.setup();
    const locker = await admin.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${name}" IN ACCESS EXCLUSIVE MODE`);
      const events = Array.from({ length: 1_000 }, (_, i) => event(i));
      // Proven by what happens in the caller's stack, not by a clock (a busy CI machine
      // stalls any loop): each record() returns nothing to wait on and sends no query.
      const query = vi.spyOn(logPool, 'query');
      for (const decision of events) expect(log.record(decision)).toBeUndefined();
      expect(query).not.toHaveBeenCalled();
      expect(log.stats().queued).toBe(1_000);
      query.mockRestore();
      // Several ticks: each waits for the INSERT still running instead of sending another
      // (which would wait for the lock too, on a connection of its own, until the pool ran out).
      await until(() => errors.length >= 4, 5_000);
      expect(log.stats()).toMatchObject({
        written: 0,
        dropped: 0,
        queued: 1_000,
        failedBatches: 1,
      });
      expect({ total: logPool.totalCount, waiting: logPool.waitingCount }).toEqual({
        total: 1,
        waiting: 0,
      });
      for (const error of errors) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(error.message).toMatch(/insert got no answer in time/);
      }
      await locker.query('COMMIT');
    } finally {
      locker.release();
    }
    await log.close();
    expect(log.stats()).toMatchObject({ written: 1_000, dropped: 0, queued: 0 });
    // The timed-out INSERTs landed after all, and so did their retries: one row per decision.
    const { rows } = await admin.query(
      `SELECT seq::int FROM "${name}" WHERE writer = $1 ORDER BY id`,
      [log.writer],
    );
    expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1));
    await logPool.end();
  });

  it('PostgreSQL down: the gate keeps answering, nothing throws, drops are counted, and rows resume once it is back', async () => {
    const server = await PostgresServer.start();
    const logPool = pool({ port: server.port, database: 'postgres', max: 4 });
    try {
      const errors: Error[] = [];
      const log = new PostgresAuditLog(logPool, {
        batchSize: 20,
        flushIntervalMs: 50,
        maxQueue: 100,
        timeoutMs: 1_000,
        onError: (error) => errors.push(error),
      });
      await log.setup();
      let recorded = 0;
      const gate = createGate({
        store: new MemoryStore(),
        eventId: 'id',
        onDecision: (decision) => {
          recorded++;
          log.record(decision);
        },
      });
      const deliver = async (from: number, count: number) => {
        const outcomes = await Promise.all(
          Array.from({ length: count }, (_, i) =>
            gate.run({ payload: { id: `evt_${from + i}` } }, () => 'ok'),
          ),
        );
        expect(outcomes.every((outcome) => outcome.status === 'processed')).toBe(true);
      };
      const unhandled = await unhandledDuring(async () => {
        await deliver(0, 10); // new + done: 20 decisions
        await log.flush();
        expect(log.stats()).toMatchObject({ written: 20, queued: 0 });

        await server.stop('immediate');
        for (let i = 0; i < 5; i++) await deliver(100 + i * 30, 30); // 300 decisions
        await until(() => log.stats().failedBatches >= 3, 10_000);
        await expect(log.flush()).rejects.toBeInstanceOf(StoreUnavailableError);
        const down = log.stats();
        expect(down.written).toBe(20);
        expect(down.queued).toBeLessThanOrEqual(100);
        expect(down.dropped).toBeGreaterThanOrEqual(200);
        expect(down.written + down.dropped + down.queued).toBe(recorded);
        expect(errors[0]).toBeInstanceOf(StoreUnavailableError);

        await server.resume();
        await until(() => log.stats().queued === 0, 15_000);
        await deliver(1_000, 10);
        await log.close();
      });
      expect(unhandled).toEqual([]);
      const stats = log.stats();
      expect(stats.written + stats.dropped).toBe(recorded);
      expect(stats.dropped).toBeGreaterThanOrEqual(200);
      const { rows } = await logPool.query(
        'SELECT seq::int, key FROM hookgate_decisions WHERE writer = $1 ORDER BY id',
        [log.writer],
      );
      expect(rows).toHaveLength(stats.written);
      // Every seq dropped is a gap; the newest decisions of the outage were kept and written.
      expect(rows.at(-1)!.seq - rows.length).toBe(stats.dropped);
      const gaps = await logPool.query(docsStatement('HAVING max(seq)'));
      expect(gaps.rows).toEqual([{ writer: log.writer, missing: String(stats.dropped) }]);
      expect(rows.some((row) => row.key === 'evt:evt_249')).toBe(true);
      expect(rows.slice(-20).every((row) => Number(row.key.slice(8)) >= 1_000)).toBe(true);
      expect(rows.map((row) => row.seq)).toEqual(
        [...rows.map((row) => row.seq)].sort((a, b) => a - b),
      );
    } finally {
      await logPool.end();
      await server.dispose();
    }
  }, 60_000);

  it('the grants of the docs make the table write-once for the application role: it inserts and reads, and cannot update, delete or truncate', async () => {
    const name = table();
    const role = `hookgate_app_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await new PostgresAuditLog(admin, { table: name }).setup();
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    const appPool = pool({ user: role, max: 2 });
    try {
      await admin.query(docsBlock('GRANT INSERT', name).replaceAll(/\bapp\b/g, role));
      const log = new PostgresAuditLog(appPool, { table: name });
      for (let i = 0; i < 5; i++) log.record(event(i));
      await log.close();
      expect(log.stats()).toMatchObject({ written: 5, failedBatches: 0 });
      const { rows } = await appPool.query(`SELECT count(*)::int AS n FROM "${name}"`);
      expect(rows[0].n).toBe(5);
      for (const statement of [
        `UPDATE "${name}" SET decision = 'done'`,
        `DELETE FROM "${name}"`,
        `TRUNCATE "${name}"`,
      ]) {
        await expect(appPool.query(statement)).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await appPool.end();
      await drop(admin, name);
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
    }
  });

  it('writes what PostgreSQL would refuse as it is: NUL characters replaced, out-of-range times as NULL, long errors cut', async () => {
    const name = table();
    const log = new PostgresAuditLog(admin, { table: name });
    await log.setup();
    const thrown = new Error('x'.repeat(5_000));
    log.record({ ...event(1), key: 'evt:a\u0000b', subject: '\u0000', occurredAt: -1e15 });
    log.record({ ...event(2), decision: 'released', error: thrown, durationMs: 12.6 });
    log.record({ ...event(3), decision: 'released', error: 'a string' });
    await log.close();
    expect(log.stats()).toMatchObject({ written: 3, dropped: 0 });
    const { rows } = await admin.query(
      `SELECT key, subject, occurred_at, error, duration_ms::int FROM "${name}" ORDER BY id`,
    );
    expect(rows[0]).toMatchObject({ key: 'evt:a\uFFFDb', subject: '\uFFFD', occurred_at: null });
    expect(rows[1].error).toBe(`Error: ${'x'.repeat(1_993)}…`);
    expect(rows[1].duration_ms).toBe(13);
    expect(rows[2].error).toBe('a string');
  });

  it('a batch the database refuses as invalid data is dropped and counted, and the log goes on', async () => {
    const name = table();
    const errors: Error[] = [];
    const checked = new PostgresAuditLog(admin, {
      table: name,
      batchSize: 2,
      onError: (error) => errors.push(error),
    });
    await checked.setup();
    await admin.query(`ALTER TABLE "${name}" ADD CHECK (key <> 'evt:poison')`);
    checked.record({ ...event(0), key: 'evt:poison' });
    checked.record(event(1));
    checked.record(event(2));
    await checked.close();
    expect(checked.stats()).toEqual({ written: 1, dropped: 2, failedBatches: 1, queued: 0 });
    expect(errors[0]!.message).toMatch(/check constraint/);
  });

  it('close() stops the timer (which never held the process open) and drops what is recorded later; it never ends the pool', async () => {
    const timers = () =>
      process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const name = table();
    const log = new PostgresAuditLog(admin, { table: name, flushIntervalMs: 10 });
    expect(timers()).toBe(before);
    await log.setup();
    log.record(event(1));
    await sleep(100); // a partial batch goes on the next tick
    expect(log.stats()).toMatchObject({ written: 1, queued: 0 });
    await log.close();
    log.record(event(2));
    expect(log.stats()).toMatchObject({ written: 1, dropped: 1, queued: 0 });
    await log.close();
    expect((await admin.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  });

  it('close() with PostgreSQL unreachable rejects, and keeps the decisions queued for a later flush()', async () => {
    const refused = pool({ port: 1, max: 1 });
    const log = new PostgresAuditLog(refused, { table: table() });
    log.record(event(1));
    log.record(event(2));
    await expect(log.close()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(log.stats()).toEqual({ written: 0, dropped: 0, failedBatches: 1, queued: 2 });
    await expect(log.flush()).rejects.toThrow(/ECONNREFUSED/);
    expect(log.stats()).toMatchObject({ failedBatches: 2, queued: 2 });
    await refused.end();
  });

  it('the setup SQL of the docs makes the same table as setup()', async () => {
    const [fromDocs, fromSetup] = [table(), table()];
    await admin.query(docsBlock('CREATE TABLE IF NOT EXISTS hookgate_decisions', fromDocs));
    await new PostgresAuditLog(admin, { table: fromSetup }).setup();
    const shape = async (name: string) => {
      const columns = await admin.query(
        `SELECT column_name, data_type, is_nullable, is_identity, identity_generation
         FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
        [name],
      );
      const indexes = await admin.query(
        'SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname',
        [name],
      );
      return {
        columns: columns.rows,
        indexes: indexes.rows.map((row) => String(row.indexdef).replaceAll(name, 'T')),
      };
    };
    const made = await shape(fromSetup);
    expect(made.columns).toHaveLength(15);
    expect(made.indexes).toHaveLength(3);
    expect(await shape(fromDocs)).toEqual(made);
  });

  it('setup() is safe from several processes at once', async () => {
    const name = table();
    const pools = [pool({ max: 1 }), pool({ max: 1 }), pool({ max: 1 })];
    try {
      await Promise.all(pools.map((each) => new PostgresAuditLog(each, { table: name }).setup()));
      const { rows } = await admin.query('SELECT to_regclass($1) IS NOT NULL AS made', [name]);
      expect(rows[0].made).toBe(true);
    } finally {
      await Promise.all(pools.map((each) => each.end()));
    }
  });

  it('bad options fail at construction, naming the option', () => {
    const bad: [object, RegExp][] = [
      [{ table: 'Bad-Name' }, /`table`/],
      [{ batchSize: 0 }, /`batchSize` must be a positive integer/],
      [{ maxQueue: 1.5 }, /`maxQueue` must be a positive integer/],
      [{ flushIntervalMs: -1 }, /`flushIntervalMs` must be a positive integer of milliseconds/],
      [{ flushIntervalMs: 2 ** 31 }, /`flushIntervalMs` must be at most 2,147,483,647 ms/],
      [{ timeoutMs: 0 }, /`timeoutMs`/],
      [{ onError: 'log' }, /`onError` must be a function/],
    ];
    for (const [options, message] of bad) {
      expect(() => new PostgresAuditLog(admin, options)).toThrow(message);
      expect(() => new PostgresAuditLog(admin, options)).toThrow(HookgateError);
    }
    expect(() => new PostgresAuditLog({} as never)).toThrow(/`client`/);
  });
});

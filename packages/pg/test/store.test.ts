import { randomUUID } from 'node:crypto';
import { createGate, type Gate, HookgateError, LeaseLostError } from '@hookgate/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type PgPool,
  type PgQueryConfig,
  type PgResult,
  PostgresAuditLog,
  PostgresLedger,
  PostgresStore,
} from '../src/index.js';
import { creates, documentedSql, drop, overtaken, pool, setupCreates, uniqueTable } from './db.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// Small: the shared server allows 100 connections, and two copies of the suite may run at once.
const shared = pool({ max: 10 });
const table = uniqueTable();
const effects = uniqueTable('hookgate_effects');
const store = new PostgresStore(shared, { table });

beforeAll(async () => {
  await store.setup();
  await shared.query(`CREATE TABLE "${effects}" (event_key text NOT NULL, worker text NOT NULL)`);
});
afterAll(async () => {
  await drop(shared, table, effects);
  await shared.end();
});

const effectRows = async (key: string) =>
  (await shared.query(`SELECT worker FROM "${effects}" WHERE event_key = $1`, [key])).rows.map(
    (row) => row.worker as string,
  );

describe('PostgresStore', () => {
  it('setup is safe to run again, and from two processes at once', async () => {
    const fresh = uniqueTable();
    const [a, b] = [pool({ max: 1 }), pool({ max: 1 })];
    try {
      await Promise.all([
        new PostgresStore(a, { table: fresh }).setup(),
        new PostgresStore(b, { table: fresh }).setup(),
      ]);
      await new PostgresStore(a, { table: fresh }).setup();
      const { rows } = await a.query('SELECT indexname FROM pg_indexes WHERE tablename = $1', [
        fresh,
      ]);
      expect(rows.map((row) => row.indexname).sort()).toEqual([
        `${fresh}_expires_at`,
        `${fresh}_pkey`,
      ]);
    } finally {
      await drop(a, fresh);
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('the claims-table SQL of the docs is what setup() runs, for the default table', async () => {
    const made = await setupCreates((recording) => new PostgresStore(recording).setup());
    expect(made.map((statement) => statement.split('(')[0])).toEqual([
      'CREATE TABLE IF NOT EXISTS hookgate_claims',
      'CREATE INDEX IF NOT EXISTS hookgate_claims_expires_at ON hookgate_claims',
    ]);
    expect(creates(documentedSql('hookgate_claims'))).toEqual(made);
  });

  it('refuses a bad table name, timeout or client when it is built, naming the option', () => {
    for (const [options, option] of [
      [{ table: 'Claims' }, 'table'],
      [{ table: 'a.b.c' }, 'table'],
      [{ table: 'claims; DROP TABLE x' }, 'table'],
      [{ table: 'c'.repeat(53) }, 'table'],
      [{ timeoutMs: 0 }, 'timeoutMs'],
    ] as const) {
      const build = () => new PostgresStore(shared, options);
      expect(build).toThrow(HookgateError);
      expect(build).toThrow(`\`${option}\``);
    }
    // 52 characters (and a schema of up to 63): every index name still fits in PostgreSQL's 63.
    expect(
      () => new PostgresStore(shared, { table: `${'s'.repeat(63)}.${'c'.repeat(52)}` }),
    ).not.toThrow();
    expect(() => new PostgresLedger(shared, { table: 'l'.repeat(53) })).toThrow(
      /`table`.*at most 52/,
    );
    expect(() => new PostgresAuditLog(shared, { table: 'a'.repeat(53) })).toThrow(
      /`table`.*at most 52/,
    );
    expect(() => new PostgresStore({} as never)).toThrow(/`client`/);
    const queryOnly = { query: shared.query.bind(shared) } as never;
    expect(() => new PostgresStore(queryOnly).transaction(async () => 1)).toThrow(/`pool`/);
  });

  it('works on a pg Client, whose transaction is refused when it is wrapped (a Client is one connection)', async () => {
    const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await client.connect();
    try {
      const store = new PostgresStore(client, { table });
      const gate = createGate({ store, eventId: 'id', namespace: `client-${randomUUID()}` });
      expect((await gate.run({ payload: { id: 'evt_1' } }, () => 1)).status).toBe('processed');
      expect(() => store.transaction(async () => 1)).toThrow(HookgateError);
      expect(() => store.transaction(async () => 1)).toThrow(/`pool`.*not a Client/);
      expect(() => new PostgresLedger(client as never)).toThrow(/not a Client/);
    } finally {
      await client.end();
    }
  });

  it('of 50 concurrent claims over 50 connections, exactly one acquires', async () => {
    // A pool of its own, ended at once: 50 connections held only for this test.
    const fifty = pool({ max: 50 });
    try {
      const own = new PostgresStore(fifty, { table });
      const key = `hookgate:evt:${randomUUID()}`;
      const states = await Promise.all(
        Array.from({ length: 50 }, () => own.claim(key, randomUUID(), 60_000)),
      );
      expect(states.filter((state) => state === 'acquired')).toHaveLength(1);
      expect(states.filter((state) => state === 'processing')).toHaveLength(49);
      expect(fifty.totalCount).toBe(50);
    } finally {
      await fifty.end();
    }
  });

  it('judges expiry by the database clock, whatever the client clock says', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10 * 365 * 86_400_000 });
    try {
      const key = `hookgate:evt:${randomUUID()}`;
      expect(await store.claim(key, randomUUID(), 400)).toBe('acquired');
      // Ten years ahead on this side: still live on the database's.
      expect(await store.claim(key, randomUUID(), 400)).toBe('processing');
      vi.setSystemTime(Date.now() - 20 * 365 * 86_400_000);
      await sleep(600);
      expect(await store.claim(key, randomUUID(), 400)).toBe('acquired');
    } finally {
      vi.useRealTimers();
    }
  });

  it('sweep deletes every expired row, in batches, and nothing live', async () => {
    const sweepTable = uniqueTable();
    // 2,500 claims at once queue up behind the pool: a loaded machine must not time them out.
    const own = new PostgresStore(shared, { table: sweepTable, timeoutMs: 30_000 });
    await own.setup();
    try {
      await Promise.all(
        Array.from({ length: 2_500 }, (_, i) => own.claim(`k:${i}`, randomUUID(), 1)),
      );
      const live = await Promise.all(
        Array.from({ length: 5 }, (_, i) => own.done(`live:${i}`, randomUUID(), 60_000)),
      );
      expect(live.every(Boolean)).toBe(true);
      await sleep(20);
      expect(await own.sweep()).toBe(2_500);
      expect(await own.sweep()).toBe(0);
      const { rows } = await shared.query(`SELECT count(*)::int AS n FROM "${sweepTable}"`);
      expect(rows[0].n).toBe(5);
    } finally {
      await drop(shared, sweepTable);
    }
  });

  it('sweep skips an expired row another transaction holds, without waiting, and takes it later', async () => {
    const sweepTable = uniqueTable();
    const own = new PostgresStore(shared, { table: sweepTable, timeoutMs: 5_000 });
    await own.setup();
    const holder = await shared.connect();
    try {
      await own.claim('k:held', randomUUID(), 1);
      await own.claim('k:free', randomUUID(), 1);
      await sleep(20);
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${sweepTable}" WHERE key = 'k:held' FOR UPDATE`);
      const started = performance.now();
      expect(await own.sweep()).toBe(1);
      expect(performance.now() - started).toBeLessThan(2_500); // not the 5 s deadline
      await holder.query('ROLLBACK');
      expect(await own.sweep()).toBe(1);
    } finally {
      holder.release();
      await drop(shared, sweepTable);
    }
  });
});

/** A prepared statement's name as the docs give it: `hg_<hash of the table>_<operation>`. */
const PREPARED = /^hg_(?<hash>[0-9a-f]{16})_(?<operation>\w+)$/;

/**
 * The store over `shared`, counting the statements each side sends. A statement sent with a
 * name of `PREPARED`'s shape is recorded as its operation (`claimNew`), anything else by its
 * first two words (`BEGIN`, `INSERT INTO`): a store statement sent unnamed shows as the latter.
 */
function counted() {
  const sent: string[] = [];
  const name = (query: string | PgQueryConfig) => {
    const prepared =
      typeof query === 'string' ? undefined : PREPARED.exec(query.name ?? '')?.groups;
    if (prepared === undefined) {
      return (typeof query === 'string' ? query : query.text)
        .trim()
        .split(/\s+/)
        .slice(0, 2)
        .join(' ');
    }
    return prepared.operation!;
  };
  const send = (on: pg.Pool | pg.PoolClient, query: string | PgQueryConfig, values?: unknown[]) =>
    (typeof query === 'string' ? on.query(query, values) : on.query(query)) as Promise<PgResult>;
  const counting = {
    query: (query: string | PgQueryConfig, values?: unknown[]) => {
      sent.push(name(query));
      return send(shared, query, values);
    },
    connect: async () => {
      const client = await shared.connect();
      return {
        query: (query: string | PgQueryConfig, values?: unknown[]) => {
          sent.push(`tx: ${name(query)}`);
          return send(client, query, values);
        },
        release: (destroy?: boolean | Error) => client.release(destroy),
      };
    },
  } as unknown as PgPool;
  return { sent, store: new PostgresStore(counting, { table }) };
}

describe('the sequence guard under concurrency', () => {
  it('of concurrent advances of one subject, every event older than the one applied is stale at once, never held', async () => {
    let wrong = 0;
    let older = 0;
    for (let round = 0; round < 10; round++) {
      const key = `seq-${randomUUID()}:seq:subject`;
      const times = Array.from({ length: 10 }, (_, i) => i * 10).sort(() => Math.random() - 0.5);
      const answers = await Promise.all(
        times.map((at) =>
          store.advance(key, {
            at,
            eventKey: `evt:e${at}`,
            token: `t${at}`,
            holdMs: 60_000,
            ttlMs: 120_000,
            ties: 'drop',
          }),
        ),
      );
      expect(answers.filter((answer) => answer === 'applied')).toHaveLength(1);
      const applied = times[answers.indexOf('applied')]!;
      answers.forEach((answer, i) => {
        if (times[i]! < applied) {
          older++;
          if (answer !== 'stale') wrong++;
        } else if (times[i]! > applied) expect(answer).toBe('held');
      });
    }
    // The statement's own read saw its snapshot, from before the applied advance committed.
    expect({ older, wrong }).toEqual({ older, wrong: 0 });
  });
});

describe('round trips per delivery', () => {
  // By operation, as `counted` records a named statement: the claim's plain insert
  // (`claimNew`), its read of a live row (`inspect`), the deciding claim (`claim`), the done's
  // own-row UPDATE (`doneOwn`) and the done that decides the rest (`done`), the advance
  // (`advance`) and the end of the hold (`releaseHold`).

  it('a new delivery costs 2 statements, a duplicate 2 (neither locks), a sequenced one 4', async () => {
    const { sent, store: own } = counted();
    const gate = createGate({ store: own, eventId: 'id', namespace: `rt-${randomUUID()}` });
    await gate.run({ payload: { id: 'e1' } }, () => 'ok');
    expect(sent.splice(0)).toEqual(['claimNew', 'doneOwn']);
    await gate.run({ payload: { id: 'e1' } }, () => 'ok');
    expect(sent.splice(0)).toEqual(['claimNew', 'inspect']);
    const sequenced = createGate({
      store: own,
      eventId: 'id',
      namespace: `rt-${randomUUID()}`,
      sequence: { subject: 's', occurredAt: 'at' },
    });
    await sequenced.run({ payload: { id: 'e2', s: 'g1', at: 1_700_000_000 } }, () => 'ok');
    expect(sent.splice(0)).toEqual(['claimNew', 'advance', 'doneOwn', 'releaseHold']);
  });

  it('each statement is prepared on the connection that runs it, named hg_<hash of the table>_<operation>', async () => {
    const other = uniqueTable();
    const one = pool({ max: 1 }); // one connection: the prepared statements below are its own
    try {
      await new PostgresStore(one, { table: other }).setup();
      for (const on of [table, other]) {
        const gate = createGate({
          store: new PostgresStore(one, { table: on }),
          eventId: 'id',
          namespace: `rt-${randomUUID()}`,
        });
        await gate.run({ payload: { id: 'e1' } }, () => 'ok');
        await gate.run({ payload: { id: 'e1' } }, () => 'ok');
      }
      const { rows } = await one.query('SELECT name, statement FROM pg_prepared_statements');
      const names = (on: string) =>
        rows
          .filter((row) => (row.statement as string).includes(`"${on}"`))
          .map((row) => PREPARED.exec(row.name as string)?.groups);
      const [ours, theirs] = [names(table), names(other)];
      for (const prepared of [ours, theirs]) {
        expect(prepared.map((name) => name?.operation).sort()).toEqual([
          'claimNew',
          'doneOwn',
          'inspect',
        ]);
        expect(new Set(prepared.map((name) => name?.hash)).size).toBe(1);
      }
      // Two tables, two hashes: two stores on one connection never share a name.
      expect(ours[0]?.hash).not.toBe(theirs[0]?.hash);
    } finally {
      await drop(one, other);
      await one.end();
    }
  });

  it('two tables whose quoted names share a 32-bit FNV-1a hash get statements of their own on one connection', async () => {
    const fnv32 = (text: string) => {
      let hash = 0x811c9dc5;
      for (let i = 0; i < text.length; i++) {
        hash ^= text.charCodeAt(i);
        hash = Math.imul(hash, 0x01000193) >>> 0;
      }
      return hash;
    };
    // A birthday search: about 80,000 names to a pair.
    const seen = new Map<number, string>();
    const prefix = `hgc_${randomUUID().slice(0, 8)}_`;
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined; i++) {
      const name = prefix + i.toString(36);
      const other = seen.get(fnv32(`"${name}"`));
      if (other === undefined) seen.set(fnv32(`"${name}"`), name);
      else pair = [other, name];
    }
    const one = pool({ max: 1 });
    try {
      for (const on of pair) {
        const store = new PostgresStore(one, { table: on });
        await store.setup();
        const gate = createGate({ store, eventId: 'id' });
        expect((await gate.run({ payload: { id: 'e1' } }, () => 'ok')).status).toBe('processed');
        expect((await gate.run({ payload: { id: 'e1' } }, () => 'ok')).status).toBe('duplicate');
      }
    } finally {
      await drop(one, ...pair);
      await one.end();
    }
  });

  it('through gate.run: a delivery in flight elsewhere costs 2 statements, one after an expired claim 4', async () => {
    const { sent, store: own } = counted();
    const namespace = `rt-${randomUUID()}`;
    const gate = createGate({ store: own, eventId: 'id', namespace });
    const held = await gate.claim({ payload: { id: 'in-flight' } });
    expect(held.acquired).toBe(true);
    sent.splice(0);
    expect((await gate.run({ payload: { id: 'in-flight' } }, () => 'ok')).status).toBe('in-flight');
    expect(sent.splice(0)).toEqual(['claimNew', 'inspect']);
    // A claim left to expire (a crashed worker): the next delivery takes the row over and runs.
    const crashed = createGate({ store: own, eventId: 'id', namespace, claimTtlMs: 1 });
    expect((await crashed.claim({ payload: { id: 'expired' } })).acquired).toBe(true);
    await vi.waitFor(
      async () => expect((await gate.inspect({ id: 'expired' })).state).toBe('absent'),
      { timeout: 5_000, interval: 5 },
    );
    sent.splice(0);
    expect((await gate.run({ payload: { id: 'expired' } }, () => 'ok')).status).toBe('processed');
    expect(sent.splice(0)).toEqual(['claimNew', 'inspect', 'claim', 'doneOwn']);
    await held.done();
  });

  it('a claim that finds an expired row takes it over with the deciding statement, after the insert and the read', async () => {
    const { sent, store: own } = counted();
    const key = `rt-${randomUUID()}:expired`;
    expect(await own.claim(key, 'tok-a', 1, 'f-a')).toBe('acquired');
    await sleep(20);
    sent.splice(0);
    expect(await own.claim(key, 'tok-b', 60_000, 'f-b')).toBe('acquired');
    expect(sent.splice(0)).toEqual(['claimNew', 'inspect', 'claim']);
    expect(await own.inspect(key)).toMatchObject({
      kind: 'processing',
      token: 'tok-b',
      fingerprint: 'f-b',
    });
  });

  it('a duplicate answers while another transaction holds its row locked for update: the claim locks nothing', async () => {
    const key = `rt-${randomUUID()}:locked`;
    expect(await store.claim(key, 'tok-a', 60_000)).toBe('acquired');
    expect(await store.done(key, 'tok-a', 60_000)).toBe(true);
    const holder = await shared.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${table}" WHERE key = $1 FOR UPDATE`, [key]);
      // The deciding statement (ON CONFLICT DO UPDATE) would wait here for the lock, past the
      // deadline.
      const impatient = new PostgresStore(shared, { table, timeoutMs: 500 });
      expect(await impatient.claim(key, 'tok-b', 60_000)).toBe('done');
      expect(await impatient.claim(key, 'tok-a', 60_000)).toBe('done');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('a duplicate that arrives while a fence has written the row waits for its COMMIT, then answers', async () => {
    const key = `rt-${randomUUID()}:fenced`;
    expect(await store.claim(key, 'tok-a', 60_000)).toBe('acquired');
    const holder = await shared.connect();
    try {
      await holder.query('BEGIN');
      // What store.transaction's fence writes just before its COMMIT.
      await holder.query(`UPDATE "${table}" SET kind = 'd' WHERE key = $1 AND token = $2`, [
        key,
        'tok-a',
      ]);
      let answer: unknown;
      const duplicate = store.claim(key, 'tok-b', 60_000).then((state) => {
        answer = state;
      });
      await sleep(200);
      expect(answer).toBeUndefined(); // the insert waits for the writing transaction
      await holder.query('COMMIT');
      await duplicate;
      expect(answer).toBe('done');
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      holder.release();
    }
  });

  it('an expired row that another transaction holds: the claim waits for it in the deciding statement, under the one deadline', async () => {
    const key = `rt-${randomUUID()}:expired-locked`;
    expect(await store.claim(key, 'tok-a', 1)).toBe('acquired');
    await sleep(20);
    const holder = await shared.connect();
    const impatient = new PostgresStore(shared, { table, timeoutMs: 300 });
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${table}" WHERE key = $1 FOR UPDATE`, [key]);
      const started = performance.now();
      const error = await impatient.claim(key, 'tok-b', 60_000).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', reason: 'unavailable' });
      expect(String(error)).toContain('PostgresStore: claim');
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // The statement was not cancelled: once the lock went, it took the row over.
    await vi.waitFor(async () => {
      expect(await store.inspect(key)).toMatchObject({ kind: 'processing', token: 'tok-b' });
    });
  });

  it('a done that finds no row of its token (expired and taken over, never written, a watermark) sends the deciding statement after the UPDATE', async () => {
    const { sent, store: own } = counted();
    const ns = `rt-${randomUUID()}`;
    // Never written: the done records the event done.
    expect(await own.done(`${ns}:absent`, 'tok-a', 60_000)).toBe(true);
    expect(sent.splice(0)).toEqual(['doneOwn', 'done']);
    expect(await own.inspect(`${ns}:absent`)).toMatchObject({ kind: 'done', token: 'tok-a' });
    // Taken over by another token: not done, and the row stays the other's.
    expect(await own.claim(`${ns}:taken`, 'tok-b', 60_000)).toBe('acquired');
    sent.splice(0);
    expect(await own.done(`${ns}:taken`, 'tok-a', 60_000)).toBe(false);
    expect(sent.splice(0)).toEqual(['doneOwn', 'done']);
    expect(await own.inspect(`${ns}:taken`)).toMatchObject({ kind: 'processing', token: 'tok-b' });
    // Its own claim, expired but not taken: one UPDATE, and the fingerprint is the done's.
    expect(await own.claim(`${ns}:own`, 'tok-c', 1, 'f-claim')).toBe('acquired');
    await sleep(20);
    sent.splice(0);
    expect(await own.done(`${ns}:own`, 'tok-c', 60_000, 'f-done')).toBe(true);
    expect(sent.splice(0)).toEqual(['doneOwn']);
    expect(await own.inspect(`${ns}:own`)).toMatchObject({
      kind: 'done',
      token: 'tok-c',
      fingerprint: 'f-done',
    });
    // A live claim keeps its fingerprint when the done has none; so does an expired one of the
    // same token (a handler's transaction marks done without one).
    expect(await own.claim(`${ns}:kept`, 'tok-d', 60_000, 'f-kept')).toBe('acquired');
    expect(await own.done(`${ns}:kept`, 'tok-d', 60_000)).toBe(true);
    expect(await own.inspect(`${ns}:kept`)).toMatchObject({ kind: 'done', fingerprint: 'f-kept' });
    expect(await own.claim(`${ns}:late`, 'tok-e', 1, 'f-late')).toBe('acquired');
    await sleep(20);
    expect(await own.done(`${ns}:late`, 'tok-e', 60_000)).toBe(true);
    expect(await own.inspect(`${ns}:late`)).toMatchObject({ kind: 'done', fingerprint: 'f-late' });
  });

  it('store.transaction keeps the fingerprint of a claim that expired while it ran: another payload is a conflict', async () => {
    const gate = createGate({
      store,
      eventId: 'id',
      namespace: `fp-${randomUUID()}`,
      fingerprint: true,
      claimTtlMs: 100,
    });
    const outcome = await gate.run(
      { payload: { id: 'e1', amount: 1 } },
      store.transaction(async () => {
        await sleep(250); // the claim expires meanwhile, and nobody takes it
        return 'paid';
      }),
    );
    expect(outcome).toMatchObject({ status: 'processed' });
    expect(await gate.inspect({ id: 'e1' })).toMatchObject({
      state: 'done',
      fingerprint: expect.any(String),
    });
    expect(await gate.run({ payload: { id: 'e1', amount: 2 } }, () => 'again')).toMatchObject({
      status: 'conflict',
    });
    // Its row swept away before the fence: the fence writes the lease's fingerprint.
    const swept = await gate.run(
      { payload: { id: 'e2', amount: 1 } },
      store.transaction(async (event) => {
        await sleep(250);
        await shared.query(`DELETE FROM "${table}" WHERE key = $1`, [event.lease!.key]);
        return 'paid';
      }),
    );
    expect(swept).toMatchObject({ status: 'processed' });
    expect(await gate.run({ payload: { id: 'e2', amount: 2 } }, () => 'again')).toMatchObject({
      status: 'conflict',
    });
  });

  it('store.transaction: the claim, then BEGIN, the effect, the fence and COMMIT on one connection; the done that follows costs nothing', async () => {
    const { sent, store: own } = counted();
    const gate = createGate({ store: own, eventId: 'id', namespace: `rt-${randomUUID()}` });
    const outcome = await gate.run(
      { payload: { id: 'e1' } },
      own.transaction(async (event, client) => {
        await client.query(`INSERT INTO "${effects}" VALUES ($1, 'rt')`, [event.lease!.key]);
        return 'paid';
      }),
    );
    expect(outcome).toMatchObject({ status: 'processed', result: 'paid' });
    expect(sent).toEqual(['claimNew', 'tx: BEGIN', 'tx: INSERT INTO', 'tx: doneOwn', 'tx: COMMIT']);
  });
});

describe('store.transaction: effects exactly once', () => {
  const gateOf = (namespace: string, claimTtlMs: number): Gate =>
    createGate({ store, eventId: 'id', namespace, claimTtlMs });

  it('a worker whose lease expired mid-transaction, after another took over, rolls back: one effect', async () => {
    const insert = (worker: string) => (client: pg.PoolClient, key: string) =>
      client.query(`INSERT INTO "${effects}" VALUES ($1, '${worker}')`, [key]);
    const { a, key } = await overtaken(store, insert('a'), insert('b'));
    expect(a).toBeInstanceOf(LeaseLostError);
    expect(await effectRows(key)).toEqual(['b']);
  });

  it('a worker whose lease expired while nobody took the key still commits: one effect', async () => {
    const namespace = `fence-${randomUUID()}`;
    const gate = gateOf(namespace, 200);
    const outcome = await gate.run(
      { payload: { id: 'evt_1' } },
      store.transaction(async (event, client) => {
        await sleep(400);
        await client.query(`INSERT INTO "${effects}" VALUES ($1, 'late')`, [event.lease!.key]);
      }),
    );
    expect(outcome.status).toBe('processed');
    expect(await effectRows(`${namespace}:evt:evt_1`)).toEqual(['late']);
    expect((await gate.run({ payload: { id: 'evt_1' } }, () => 1)).status).toBe('duplicate');
  });

  it('a handler that throws rolls its effects back and releases the claim: the retry runs', async () => {
    const namespace = `fence-${randomUUID()}`;
    const gate = gateOf(namespace, 60_000);
    const delivery = { payload: { id: 'evt_1' } };
    const key = `${namespace}:evt:evt_1`;
    const failing = store.transaction(async (event, client) => {
      await client.query(`INSERT INTO "${effects}" VALUES ($1, 'failed')`, [event.lease!.key]);
      throw new Error('the payment provider said no');
    });
    await expect(gate.run(delivery, failing)).rejects.toThrow('said no');
    expect(await effectRows(key)).toEqual([]);
    const retried = await gate.run(
      delivery,
      store.transaction(async (event, client) => {
        await client.query(`INSERT INTO "${effects}" VALUES ($1, 'retry')`, [event.lease!.key]);
      }),
    );
    expect(retried.status).toBe('processed');
    expect(await effectRows(key)).toEqual(['retry']);
  });

  it('a storm of redeliveries over three workers whose handlers outlive their leases: every event has exactly one effect', async () => {
    const namespace = `storm-${randomUUID()}`;
    const workers = ['w1', 'w2', 'w3'].map((name) => ({ name, gate: gateOf(namespace, 150) }));
    // Fewer events than the pool has connections: with more, the transactions would hold every
    // connection, and the redeliveries' claims would wait in the pool's queue until the first
    // runs had committed, overtaking none.
    const events = Array.from({ length: 8 }, (_, i) => `evt_${i}`);
    let outcomes = 0;
    let rolledBack = 0;
    const slowOnce = new Set<string>();
    const deliver = async (id: string) => {
      // A provider: redeliver (to any worker) until the event is acknowledged.
      for (let attempt = 0; attempt < 40; attempt++) {
        const worker = workers[(attempt + id.length) % workers.length]!;
        const outcome = await worker.gate
          .run(
            { payload: { id } },
            store.transaction(async (event, client) => {
              await client.query(`INSERT INTO "${effects}" VALUES ($1, $2)`, [
                event.lease!.key,
                worker.name,
              ]);
              // The first run of every event outlives its 150 ms claim, so that a redelivery
              // overtakes it; some later ones do too.
              const first = !slowOnce.has(id);
              slowOnce.add(id);
              await sleep(first || Math.random() < 0.2 ? 250 : 10);
            }),
          )
          .catch((error: unknown) => {
            if (error instanceof LeaseLostError) rolledBack++;
            return { status: 'failed' };
          });
        if (outcome.status === 'processed' || outcome.status === 'duplicate') {
          outcomes++;
          return;
        }
        await sleep(20 + Math.random() * 60);
      }
    };
    // Three concurrent deliveries of every event, as a retrying provider sends them.
    await Promise.all(events.flatMap((id) => [deliver(id), deliver(id), deliver(id)]));
    expect(outcomes).toBe(events.length * 3);
    // Fenced transactions were overtaken and rolled back: the case this storm is about.
    expect(rolledBack).toBeGreaterThan(0);
    const { rows } = await shared.query(
      `SELECT event_key, count(*)::int AS n FROM "${effects}" WHERE event_key LIKE $1 GROUP BY event_key`,
      [`${namespace}:%`],
    );
    expect(rows).toHaveLength(events.length);
    expect(rows.filter((row) => row.n !== 1)).toEqual([]);
  });
});

import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGate, type GateOptions } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { PostgresAuditLog, PostgresStore } from '@hookgate/pg';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { build, hookgate, hookgateOnTerminal, hookgateRunning, type Running } from './binary.js';

// The shared servers; every key and table this file makes carries `run`, and is removed after.
const REDIS_URL = 'redis://127.0.0.1:6379';
const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const run = randomUUID().replaceAll('-', '').slice(0, 12);
const TABLE = `hookgate_cli_${run}`;
/** A namespace of this run; `_` in it is a LIKE wildcard that the PostgreSQL stats escape. */
const ns = (label: string) => `cli_${run}.${label}`;
/** Another namespace that an unescaped `LIKE 'cli_<run>.<label>:%'` would match too. */
const lookalike = (label: string) => `clix${run}.${label}`;

const redis = new Redis(REDIS_URL, { lazyConnect: true });
const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
pool.on('error', () => {});

beforeAll(async () => {
  build();
  await redis.connect();
  await new PostgresStore(pool, { table: TABLE }).setup();
}, 300_000);

afterAll(async () => {
  for (const pattern of [`cli_${run}.*`, `clix${run}.*`]) {
    for await (const keys of redis.scanStream({ match: pattern, count: 1000 })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
  }
  redis.disconnect();
  await pool.query(`DROP TABLE IF EXISTS "${TABLE}"`);
  await pool.end();
});

const stores = [
  {
    name: 'Redis',
    flags: (namespace: string) => ['--redis', REDIS_URL, '--namespace', namespace],
    store: () => new IoRedisStore(redis),
  },
  {
    name: 'PostgreSQL',
    flags: (namespace: string) => [
      '--postgres',
      POSTGRES_URL,
      '--namespace',
      namespace,
      '--table',
      TABLE,
    ],
    store: () => new PostgresStore(pool, { table: TABLE }),
  },
];

/** A payload path for the sequence guard's subject and event time. */
const SEQUENCE = { sequence: true, subject: 'subject', occurredAt: 'at' } as const;

describe.each(stores)('hookgate over $name', ({ name, flags, store }) => {
  const gateOf = (namespace: string, options: Partial<GateOptions> = {}) =>
    createGate({ store: store(), namespace, eventId: 'id', ...options });

  it('inspect shows a claim in flight, then done, by id or key, as text and as JSON', async () => {
    const namespace = ns('inspect');
    const gate = gateOf(namespace, { fingerprint: true });
    const claim = await gate.claim({ payload: { id: 'evt_1', amount: 5 } });
    expect(claim.acquired).toBe(true);
    const fingerprint = (await gate.inspect('evt:evt_1')).fingerprint!;
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);

    const text = await hookgate(['inspect', 'evt_1', ...flags(namespace)]);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(/^key +evt:evt_1$/m);
    expect(text.stdout).toMatch(
      new RegExp(`^namespace +${namespace.replaceAll('.', '\\.')}$`, 'm'),
    );
    expect(text.stdout).toMatch(/^state +processing$/m);
    expect(text.stdout).toMatch(/^expires in +4m [0-5]?\ds$/m);
    expect(text.stdout).toMatch(new RegExp(`^fingerprint +${fingerprint}$`, 'm'));

    const json = await hookgate(['inspect', 'evt:evt_1', '--json', ...flags(namespace)]);
    expect(json.code).toBe(0);
    const inFlight = JSON.parse(json.stdout);
    expect(inFlight).toEqual({
      key: 'evt:evt_1',
      state: 'processing',
      ttlMs: expect.any(Number),
      fingerprint,
    });
    expect(inFlight.ttlMs).toBeGreaterThan(200_000);
    expect(inFlight.ttlMs).toBeLessThanOrEqual(300_000);

    await claim.done();
    const done = JSON.parse(
      (await hookgate(['inspect', 'evt_1', '--json', ...flags(namespace)])).stdout,
    );
    expect(done).toMatchObject({ key: 'evt:evt_1', state: 'done', fingerprint });
    expect(done.ttlMs).toBeGreaterThan(86_000_000);
    expect(done.ttlMs).toBeLessThanOrEqual(86_400_000);
    const doneText = await hookgate(['inspect', 'evt_1', ...flags(namespace)]);
    expect(doneText.stdout).toMatch(/^state +done$/m);
    expect(doneText.stdout).toMatch(/^expires in +23h 59m [0-5]?\ds$/m);
  });

  it('an id the gate hashes (too long, or with odd characters) is found by the same hash', async () => {
    const namespace = ns('hashed');
    const id = `order ${'x'.repeat(200)}`;
    const claim = await gateOf(namespace).claim({ payload: { id } });
    expect(claim.key).toBe(`evt:#${createHash('sha256').update(id).digest('hex')}`);
    const found = await hookgate(['inspect', id, '--json', ...flags(namespace)]);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({ key: claim.key, state: 'processing' });
  });

  it('inspect of an event without a record says absent and exits 3', async () => {
    const namespace = ns('absent');
    const text = await hookgate(['inspect', 'evt_none', ...flags(namespace)]);
    expect(text.code).toBe(3);
    expect(text.stdout).toMatch(/^state +absent$/m);
    expect(text.stdout).not.toMatch(/expires in/);
    const digest = `dig:${'ab'.repeat(32)}`;
    const json = await hookgate(['inspect', digest, '--json', ...flags(namespace)]);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toEqual({ key: digest, state: 'absent' });
  });

  it('forget --yes deletes a done record, and a redelivery of the event runs again', async () => {
    const namespace = ns('forget');
    const gate = gateOf(namespace);
    let runs = 0;
    const handler = async () => {
      runs++;
    };
    expect((await gate.run({ payload: { id: 'evt_2' } }, handler)).status).toBe('processed');
    expect((await gate.run({ payload: { id: 'evt_2' } }, handler)).status).toBe('duplicate');

    const forgot = await hookgate(['forget', 'evt_2', '--yes', ...flags(namespace)]);
    expect(forgot).toMatchObject({ code: 0, stderr: '' });
    expect(forgot.stdout).toBe('Forgot evt:evt_2 (was done): a redelivery of it will run again.\n');
    const after = await hookgate(['inspect', 'evt_2', '--json', ...flags(namespace)]);
    expect(after.code).toBe(3);
    expect(JSON.parse(after.stdout).state).toBe('absent');

    expect((await gate.run({ payload: { id: 'evt_2' } }, handler)).status).toBe('processed');
    expect(runs).toBe(2);
  });

  it('forget of an event without a record exits 3; --json says what happened', async () => {
    const namespace = ns('forget-json');
    const none = await hookgate(['forget', 'evt_none', '--yes', '--json', ...flags(namespace)]);
    expect(none.code).toBe(3);
    expect(JSON.parse(none.stdout)).toEqual({ key: 'evt:evt_none', forgotten: false });

    await gateOf(namespace).run({ payload: { id: 'evt_j' } }, async () => {});
    const forgot = await hookgate(['forget', 'evt:evt_j', '-y', '--json', ...flags(namespace)]);
    expect(forgot.code).toBe(0);
    expect(JSON.parse(forgot.stdout)).toEqual({ key: 'evt:evt_j', forgotten: true });
  });

  it('forgetting a claim in flight warns that a redelivery would run beside it', async () => {
    const namespace = ns('forget-flight');
    const claim = await gateOf(namespace).claim({ payload: { id: 'evt_f' } });
    expect(claim.acquired).toBe(true);
    const forgot = await hookgate(['forget', 'evt_f', '--yes', ...flags(namespace)]);
    expect(forgot.code).toBe(0);
    expect(forgot.stderr).toMatch(/evt:evt_f is in flight: forgetting it lets a redelivery run/);
    expect(forgot.stdout).toMatch(/^Forgot evt:evt_f \(was processing\)/);
  });

  it('forget without --yes refuses when stdin is not a terminal (exit 2), and keeps the record', async () => {
    const namespace = ns('refuse');
    await gateOf(namespace).run({ payload: { id: 'evt_3' } }, async () => {});
    const refused = await hookgate(['forget', 'evt_3', ...flags(namespace)], { input: 'y\n' });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/pass --yes when stdin is not a terminal/);
    const still = await hookgate(['inspect', 'evt_3', '--json', ...flags(namespace)]);
    expect(JSON.parse(still.stdout).state).toBe('done');
  });

  it('forget on a terminal asks "Forget <key>? [y/N]", and only a yes forgets', async () => {
    const namespace = ns('confirm');
    await gateOf(namespace).run({ payload: { id: 'evt_4' } }, async () => {});

    const declined = await hookgateOnTerminal(['forget', 'evt_4', ...flags(namespace)], 'n\n');
    expect(declined.code).toBe(0);
    expect(declined.stdout).toMatch(/evt:evt_4: done, expires in 23h 59m/);
    expect(declined.stdout).toContain('Forget evt:evt_4? [y/N]');
    expect(declined.stdout).toContain('Nothing was forgotten.');
    const kept = await hookgate(['inspect', 'evt_4', '--json', ...flags(namespace)]);
    expect(JSON.parse(kept.stdout).state).toBe('done');

    const json = await hookgateOnTerminal(
      ['forget', 'evt_4', '--json', ...flags(namespace)],
      'no\n',
    );
    expect(json.code).toBe(0);
    expect(json.stdout).toContain('{\r\n  "key": "evt:evt_4",\r\n  "forgotten": false\r\n}');

    const confirmed = await hookgateOnTerminal(['forget', 'evt_4', ...flags(namespace)], 'Yes\n');
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toContain('Forgot evt:evt_4 (was done)');
    const gone = await hookgate(['inspect', 'evt_4', ...flags(namespace)]);
    expect(gone.code).toBe(3);
  });

  it('with the sequence guard the watermark stays: a forgotten older event replays as stale', async () => {
    const namespace = ns('replay');
    const gate = gateOf(namespace, SEQUENCE);
    const older = { payload: { id: 'evt_old', subject: 'grant_1', at: '2026-01-01T00:00:00Z' } };
    const newer = { payload: { id: 'evt_new', subject: 'grant_1', at: '2026-01-02T00:00:00Z' } };
    expect((await gate.run(older, async () => {})).status).toBe('processed');
    expect((await gate.run(newer, async () => {})).status).toBe('processed');

    expect((await hookgate(['forget', 'evt_old', '--yes', ...flags(namespace)])).code).toBe(0);
    expect((await gate.run(older, async () => {})).status).toBe('stale');
    // The newest event of the subject, forgotten, runs again.
    expect((await hookgate(['forget', 'evt_new', '--yes', ...flags(namespace)])).code).toBe(0);
    expect((await gate.run(newer, async () => {})).status).toBe('processed');
  });

  it("stats counts the namespace's live records by state, and no other namespace's", async () => {
    const namespace = ns('stats');
    const gate = gateOf(namespace, SEQUENCE);
    const event = (id: string, at: string) => ({ payload: { id, subject: `s_${id}`, at } });
    await gate.claim(event('evt_p1', '2026-01-01T00:00:00Z'));
    await gate.claim(event('evt_p2', '2026-01-01T00:00:00Z'));
    await gate.run(event('evt_d1', '2026-01-01T00:00:00Z'), async () => {});
    // Two claims in flight, one done: 2 processing, 1 done, 3 watermarks (one per subject).
    await gateOf(lookalike('stats')).run({ payload: { id: 'evt_other' } }, async () => {});
    await gateOf(`${namespace}2`).run({ payload: { id: 'evt_other' } }, async () => {});
    let other = 0;
    let counter = 0;
    if (name === 'Redis') {
      await redis.set(`${namespace}:evt:foreign`, 'not hookgate', 'PX', 60_000);
      await redis.hset(`${namespace}:evt:a-hash`, 'field', 'value');
      other = 2;
      // Another application's counter reads as a done record: counted by its shape.
      await redis.set(`${namespace}:evt:counter`, '42', 'PX', 60_000);
      counter = 1;
    }

    const json = await hookgate(['stats', '--json', ...flags(namespace)]);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({
      namespace,
      processing: 2,
      done: 1 + counter,
      watermark: 3,
      other,
      total: 6 + other + counter,
      truncated: false,
    });
    const text = await hookgate(['stats', ...flags(namespace)]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^processing +2$/m);
    expect(text.stdout).toMatch(new RegExp(`^done +${1 + counter}$`, 'm'));
    expect(text.stdout).toMatch(/^watermark +3$/m);
    expect(text.stdout).toMatch(new RegExp(`^other +${other}$`, 'm'));
    expect(text.stdout).toMatch(new RegExp(`^total +${6 + other + counter}$`, 'm'));
    expect(text.stdout).not.toMatch(/truncated/);
  });

  it('an unreachable server is exit 1 with one line on stderr, and no stack', async () => {
    const url = name === 'Redis' ? 'redis://127.0.0.1:1' : 'postgres://postgres@127.0.0.1:1/test';
    const where = name === 'Redis' ? 'Redis at 127.0.0.1:1' : 'PostgreSQL at 127.0.0.1:1/test';
    const flag = name === 'Redis' ? '--redis' : '--postgres';
    for (const command of [['inspect', 'evt_1'], ['forget', 'evt_1', '--yes'], ['stats']]) {
      const failed = await hookgate([...command, flag, url]);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toBe('');
      expect(failed.stderr).toMatch(
        new RegExp(`^hookgate: cannot connect to ${where}: connect ECONNREFUSED .*\\n$`),
      );
      expect(failed.ms).toBeLessThan(5_000);
    }
  });

  it('an error never prints the password of the URL', async () => {
    const url =
      name === 'Redis'
        ? 'redis://user:s3cret-pw@127.0.0.1:1'
        : 'postgres://postgres:s3cret-pw@127.0.0.1:1/test';
    const failed = await hookgate(['stats', name === 'Redis' ? '--redis' : '--postgres', url]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^hookgate: cannot connect to /);
    expect(failed.stderr).not.toContain('s3cret-pw');
  });

  it('a server that accepts but never answers is exit 1 after --timeout, not a hang', async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const url =
        name === 'Redis'
          ? `redis://127.0.0.1:${port}`
          : `postgres://postgres@127.0.0.1:${port}/test`;
      const flag = name === 'Redis' ? '--redis' : '--postgres';
      const failed = await hookgate(['inspect', 'evt_1', flag, url, '--timeout', '300']);
      expect(failed.code).toBe(1);
      // pg's own connection timeout, set to the same deadline, may say it first.
      expect(failed.stderr).toMatch(
        /^hookgate: cannot connect to .*: (no answer within 300 ms|Connection terminated due to connection timeout)\n$/,
      );
      expect(failed.ms).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('hookgate over Redis only', () => {
  it('stats --limit stops reading keys and says the counts are truncated', async () => {
    const namespace = ns('limit');
    const gate = createGate({ store: new IoRedisStore(redis), namespace, eventId: 'id' });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await gate.run({ payload: { id } }, async () => {});
    const flags = ['--redis', REDIS_URL, '--namespace', namespace];

    const limited = await hookgate(['stats', '--limit', '2', '--json', ...flags]);
    expect(limited.code).toBe(0);
    expect(JSON.parse(limited.stdout)).toMatchObject({ done: 2, total: 2, truncated: true });
    const text = await hookgate(['stats', '--limit', '2', ...flags]);
    expect(text.stdout).toMatch(/^truncated +yes: the scan stopped at --limit keys$/m);

    const all = await hookgate(['stats', '--json', ...flags]);
    expect(JSON.parse(all.stdout)).toMatchObject({ done: 5, total: 5, truncated: false });
  });

  it('a value hookgate did not write is a store error (exit 1), and is left as it is', async () => {
    const namespace = ns('foreign');
    await redis.set(`${namespace}:evt:mine`, 'not hookgate', 'PX', 60_000);
    const flags = ['--redis', REDIS_URL, '--namespace', namespace];
    for (const command of [['inspect'], ['forget', '--yes']]) {
      const [verb, ...rest] = command;
      const failed = await hookgate([verb!, 'evt:mine', ...rest, ...flags]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/holds a value hookgate did not write; left as it is\n$/);
    }
    expect(await redis.get(`${namespace}:evt:mine`)).toBe('not hookgate');
  });
});

describe('hookgate over Redis only: what it prints of a value', () => {
  it('escapes the control characters of a value read from the store (text and --json, C0 and C1)', async () => {
    const namespace = ns('escapes');
    const hostile = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202etxt';
    await redis.set(`${namespace}:evt:odd`, `d:tok:${hostile}`, 'PX', 60_000);
    const flags = ['--redis', REDIS_URL, '--namespace', namespace];
    const text = await hookgate(['inspect', 'evt:odd', ...flags]);
    const json = await hookgate(['inspect', 'evt:odd', '--json', ...flags]);
    for (const { code, stdout } of [text, json]) {
      expect(code).toBe(0);
      for (const raw of ['\u001b', '\u0007', '\u009b', '\u202e']) expect(stdout).not.toContain(raw);
    }
    expect(text.stdout).toMatch(
      /^fingerprint +\\u001b\]0;pwned\\u0007\\u001b\[2J\\u009b31m\\u202etxt$/m,
    );
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'done', fingerprint: hostile });
  });
});

describe('hookgate over PostgreSQL only', () => {
  it('a table that does not exist is a store error (exit 1)', async () => {
    const table = `hookgate_cli_missing_${run}`;
    const flags = ['--postgres', POSTGRES_URL, '--table', table];
    for (const command of [['inspect', 'evt_1'], ['stats']]) {
      const failed = await hookgate([...command, ...flags]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(new RegExp(`relation "${table}" does not exist\\n$`));
    }
  });
});

describe('hookgate watch', () => {
  const LOG = `hookgate_cli_log_${run}`;
  const log = new PostgresAuditLog(pool, { table: LOG, flushIntervalMs: 50 });
  const started: Running[] = [];
  const watch = (args: string[]) => {
    const watcher = hookgateRunning(['watch', '--postgres', POSTGRES_URL, '--table', LOG, ...args]);
    started.push(watcher);
    return watcher;
  };
  const gateOf = (namespace: string) =>
    createGate({
      store: new PostgresStore(pool, { table: TABLE }),
      namespace,
      eventId: 'id',
      onDecision: log.record,
    });
  const fail = async () => {
    throw new Error('handler failed');
  };
  /** What a `--json` watch printed, parsed. */
  const printed = (watcher: Running) =>
    watcher.lines().map((line) => JSON.parse(line) as Record<string, unknown>);
  /** The insert a transaction of PostgresAuditLog makes, by hand, for one decision. */
  const insert = (client: pg.Pool | pg.PoolClient, namespace: string, key: string) =>
    client.query(
      `INSERT INTO "${LOG}" (writer, seq, at, decision, namespace, key)
       VALUES (gen_random_uuid(), 1, now(), 'new', $1, $2) RETURNING id::text AS id`,
      [namespace, key],
    );
  const lastId = async () =>
    (await pool.query(`SELECT coalesce(max(id), 0)::text AS id FROM "${LOG}"`)).rows[0]
      .id as string;
  /**
   * A `--json` watch of `namespace` from the last row on, polling every 50 ms, with `extra`
   * flags, once it watches.
   */
  const watchFromNow = async (namespace: string, ...extra: string[]) => {
    const since = await lastId();
    const watcher = watch([
      '--json',
      '--since-id',
      since,
      '--namespace',
      namespace,
      '--interval',
      '50',
      ...extra,
    ]);
    await watcher.until(() => watcher.stderr().includes('watching'));
    return watcher;
  };

  beforeAll(() => log.setup());

  afterAll(async () => {
    for (const watcher of started) await watcher.stop('SIGKILL');
    await log.close();
    await pool.query(`DROP TABLE IF EXISTS "${LOG}"`);
  });

  it('a log that reuses ids (TRUNCATE ... RESTART IDENTITY) under it: exit 1, saying why, rather than silence; rows deleted alone change nothing', async () => {
    const table = `hookgate_cli_restart_${run}`;
    const own = new PostgresAuditLog(pool, { table });
    await own.setup();
    const insert = (key: string) =>
      pool.query(
        `INSERT INTO "${table}" (writer, seq, at, decision, namespace, key)
         VALUES (gen_random_uuid(), 1, now(), 'new', 'ns', $1)`,
        [key],
      );
    /** Once a poll of the watch that began after this call has finished. */
    const polled = async () => {
      const { rows } = await pool.query('SELECT clock_timestamp() AS now');
      await vi.waitFor(
        async () => {
          const seen = await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE state = 'idle' AND query_start > $1
               AND query LIKE '%pg_current_snapshot()%' AND query LIKE $2`,
            [rows[0].now, `%"${table}"%`],
          );
          expect(seen.rows).toHaveLength(1);
        },
        { timeout: 10_000, interval: 20 },
      );
    };
    try {
      for (const key of ['evt:a', 'evt:b', 'evt:c']) await insert(key);
      const watcher = hookgateRunning([
        'watch',
        '--postgres',
        POSTGRES_URL,
        '--table',
        table,
        '--interval',
        '50',
      ]);
      started.push(watcher);
      await watcher.until(() => watcher.stderr().includes('watching'));
      await insert('evt:d'); // id 4
      await watcher.until(() => watcher.lines().length === 1);
      // A retention job that empties the table: the next id, 5, is still new.
      await pool.query(`DELETE FROM "${table}"`);
      await polled(); // a poll saw it empty
      await insert('evt:e');
      await watcher.until(() => watcher.lines().length === 2);
      expect(watcher.lines()[1]).toContain('evt:e');
      await pool.query(`TRUNCATE "${table}" RESTART IDENTITY`);
      await polled(); // a poll saw it empty: a drop alone could be rows deleted
      // Id 1, below the 5 already printed: the highest id grows again without passing 5.
      await insert('evt:again');
      const { code, stderr } = await watcher.exited;
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /hookgate: the decision log reuses ids \(its highest went from 0 to 1, below the 5 it held/,
      );
    } finally {
      await own.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    }
  });

  it('--json --from-start prints every decision as one JSON line while the gate writes them; SIGINT exits 0', async () => {
    const namespace = ns('watch');
    const gate = gateOf(namespace);
    await gate.run({ payload: { id: 'evt_w1' } }, async () => {});
    await log.flush();
    const watcher = watch(['--json', '--from-start', '--namespace', namespace, '--interval', '50']);
    await watcher.until(() => watcher.lines().length >= 2);

    await gate.run({ payload: { id: 'evt_w1' } }, async () => {});
    await expect(gate.run({ payload: { id: 'evt_w2' } }, fail)).rejects.toThrow('handler failed');
    await log.flush();
    await watcher.until(() => watcher.lines().length >= 5);

    const decisions = printed(watcher);
    expect(decisions.map(({ decision, key }) => `${decision} ${key}`)).toEqual([
      'new evt:evt_w1',
      'done evt:evt_w1',
      'duplicate evt:evt_w1',
      'new evt:evt_w2',
      'released evt:evt_w2',
    ]);
    for (const decision of decisions) {
      expect(decision).toMatchObject({ namespace, source: 'event-id', writer: log.writer });
    }
    expect(decisions[1]!.durationMs).toEqual(expect.any(Number));
    expect(decisions[4]!.error).toBe('Error: handler failed');
    const ids = decisions.map(({ id }) => id as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(5);

    const stopped = await watcher.stop('SIGINT');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toBe(`hookgate: watching ${LOG} for every decision (Ctrl-C stops)\n`);
  });

  it('starts at the end of the log, keeps the decisions --key and --decision name; SIGTERM exits 0', async () => {
    const namespace = ns('watch-filter');
    const gate = gateOf(namespace);
    // Before the watch: a decision that passes the filters, and is not printed.
    await expect(gate.run({ payload: { id: 'evt_k1' } }, fail)).rejects.toThrow();
    await log.flush();
    const watcher = watch([
      '--json',
      '--key',
      'evt_k1',
      '--decision',
      'done,released',
      '--decision',
      'duplicate',
      '--interval',
      '50',
    ]);
    await watcher.until(() => watcher.stderr().includes('for new decisions'));

    await gate.run({ payload: { id: 'evt_k2' } }, async () => {});
    await gate.run({ payload: { id: 'evt_k1' } }, async () => {});
    await gateOf(`${namespace}2`).run({ payload: { id: 'evt_k1' } }, async () => {});
    await gate.run({ payload: { id: 'evt_k1' } }, async () => {});
    await log.flush();
    // The duplicate is the last row: once it is printed, every row before it was read.
    await watcher.until(() => watcher.lines().some((line) => line.includes('"duplicate"')));

    expect(
      printed(watcher).map(({ decision, key, namespace }) => [decision, key, namespace]),
    ).toEqual([
      ['done', 'evt:evt_k1', namespace],
      ['done', 'evt:evt_k1', `${namespace}2`],
      ['duplicate', 'evt:evt_k1', namespace],
    ]);
    expect((await watcher.stop('SIGTERM')).code).toBe(0);
  });

  it('prints one line of text per decision, with control characters escaped', async () => {
    const namespace = ns('watch-text');
    const watcher = watch(['--from-start', '--namespace', namespace, '--interval', '50']);
    log.record({
      decision: 'invalid',
      namespace,
      provider: 'stripe',
      reason: 'missing-id',
      error: new Error('bad\nline \u001b[31mred'),
      at: Date.parse('2026-01-02T03:04:05.678Z'),
    });
    await gateOf(namespace).run({ payload: { id: 'evt_t1' } }, async () => {});
    await log.flush();
    await watcher.until(() => watcher.lines().length >= 3);

    const [invalid, fresh, done] = watcher.lines();
    expect(invalid).toBe(
      `2026-01-02T03:04:05.678Z  ${'invalid'.padEnd(17)}  -  stripe  missing-id: Error: bad\\nline \\u001b[31mred`,
    );
    expect(fresh).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}new {14} {2}evt:evt_t1 {2}-$/,
    );
    expect(done).toMatch(/^\S+Z {2}done {13} {2}evt:evt_t1 {2}- {2}\d+ ms$/);
    expect((await watcher.stop('SIGINT')).code).toBe(0);
  });

  it('prints a row whose transaction commits after a row with a higher id', async () => {
    const namespace = ns('watch-late');
    const watcher = await watchFromNow(namespace);

    const slow = await pool.connect();
    try {
      await slow.query('BEGIN');
      const late = (await insert(slow, namespace, 'evt:late')).rows[0].id as string;
      const early = (await insert(pool, namespace, 'evt:early')).rows[0].id as string;
      expect(Number(late)).toBeLessThan(Number(early));
      await watcher.until(() => watcher.lines().length >= 1);
      // A row printed after the skipped id proves polls went past it while it was invisible.
      const marker = (await insert(pool, namespace, 'evt:marker')).rows[0].id as string;
      await watcher.until(() => watcher.lines().length >= 2);
      await slow.query('COMMIT');
      await watcher.until(() => watcher.lines().length >= 3);
      expect(printed(watcher).map(({ id, key }) => [id, key])).toEqual([
        [Number(early), 'evt:early'],
        [Number(marker), 'evt:marker'],
        [Number(late), 'evt:late'],
      ]);
    } finally {
      slow.release();
    }
    const stopped = await watcher.stop('SIGINT');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).not.toMatch(/no longer waiting/);
  });

  it('without --since-id, a row whose transaction was open as the watch started is printed when it commits', async () => {
    const namespace = ns('watch-open');
    const slow = await pool.connect();
    try {
      await slow.query('BEGIN');
      await insert(slow, namespace, 'evt:open');
      await insert(pool, namespace, 'evt:before'); // a newer id, committed: the watch starts there
      const watcher = watch(['--json', '--namespace', namespace, '--interval', '50']);
      await watcher.until(() => watcher.stderr().includes('watching'));
      await slow.query('COMMIT');
      await insert(pool, namespace, 'evt:after');
      await watcher.until(() => watcher.lines().length >= 2);
      expect(
        printed(watcher)
          .map(({ key }) => key)
          .sort(),
      ).toEqual(['evt:after', 'evt:open']);
      expect((await watcher.stop('SIGINT')).code).toBe(0);
    } finally {
      slow.release();
    }
  });

  it('an id whose transaction rolled back does not hold back the rows after it', async () => {
    const namespace = ns('watch-rollback');
    const watcher = await watchFromNow(namespace);
    const slow = await pool.connect();
    try {
      await slow.query('BEGIN');
      await insert(slow, namespace, 'evt:never');
      await insert(pool, namespace, 'evt:after');
      await watcher.until(() => watcher.lines().length >= 1);
      await slow.query('ROLLBACK');
    } finally {
      slow.release();
    }
    await insert(pool, namespace, 'evt:last');
    await watcher.until(() => watcher.lines().length >= 2);
    // Anything printed by mistake would come before a row written after it: wait for that row.
    await insert(pool, namespace, 'evt:final');
    await watcher.until(() => watcher.lines().length >= 3);
    expect(printed(watcher).map(({ key }) => key)).toEqual(['evt:after', 'evt:last', 'evt:final']);
    const stopped = await watcher.stop('SIGINT');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).not.toMatch(/no longer waiting/);
  });

  it('prints a retried batch whose insert held its id while it waited on the first attempt, which rolled back', async () => {
    const namespace = ns('watch-retry');
    const watcher = await watchFromNow(namespace);
    const writer = randomUUID();
    // PostgresAuditLog's insert: a retry of a batch skips the rows its first attempt wrote.
    const attempt = (client: pg.PoolClient | pg.Pool, key: string, as = writer) =>
      client.query(
        `INSERT INTO "${LOG}" (writer, seq, at, decision, namespace, key)
         VALUES ($1, 1, now(), 'new', $2, $3) ON CONFLICT (writer, seq) DO NOTHING`,
        [as, namespace, key],
      );
    const [first, retry] = [await pool.connect(), await pool.connect()];
    try {
      await first.query('BEGIN');
      await attempt(first, 'evt:first-attempt');
      await retry.query('BEGIN');
      // Takes its id, then waits on the first attempt's row, with no xid of its own yet.
      const retried = attempt(retry, 'evt:retried');
      const pid = (retry as unknown as { processID: number }).processID;
      await vi.waitFor(
        async () => {
          const waiting = await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`,
            [pid],
          );
          expect(waiting.rowCount).toBe(1);
        },
        { timeout: 10_000, interval: 50 },
      );
      // A row printed after a later commit proves a poll went past both ids since.
      const printedAfter = async (key: string, lines: number) => {
        await attempt(pool, key, randomUUID());
        await watcher.until(() => watcher.lines().length >= lines);
      };
      await printedAfter('evt:other', 1);
      await printedAfter('evt:marker-1', 2); // a poll that asked for both ids
      await first.query('ROLLBACK');
      await retried; // the retry has its xid now, above the snapshot the gaps were seen in
      await printedAfter('evt:marker-2', 3);
      await retry.query('COMMIT');
    } finally {
      first.release();
      retry.release();
    }
    await watcher.until(() => watcher.lines().length >= 4);
    expect(printed(watcher).map(({ key }) => key)).toEqual([
      'evt:other',
      'evt:marker-1',
      'evt:marker-2',
      'evt:retried',
    ]);
    expect((await watcher.stop('SIGINT')).code).toBe(0);
  });

  it('a time PostgreSQL holds as infinity is printed as such, and the rows after it too', async () => {
    const namespace = ns('watch-infinity');
    const since = await lastId();
    for (const at of ['now()', "'infinity'", 'now()']) {
      await pool.query(
        `INSERT INTO "${LOG}" (writer, seq, at, decision, namespace, key)
         VALUES (gen_random_uuid(), 1, ${at}, 'new', $1, 'evt:x')`,
        [namespace],
      );
    }
    for (const format of [['--json'], []]) {
      const watcher = watch([...format, '--since-id', since, '--namespace', namespace]);
      await watcher.until(() => watcher.lines().length >= 3);
      const stopped = await watcher.stop('SIGINT');
      expect(stopped.code).toBe(0);
      expect(stopped.stderr).not.toMatch(/failed/);
      const times = watcher
        .lines()
        .map((line) => (format.length > 0 ? JSON.parse(line).at : line.split('  ')[0]));
      expect(times[1]).toBe('infinity');
      expect(times[0]).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });

  it('a log whose ids pass 2^53 - 1 is exit 1, not a loop', async () => {
    const table = `hookgate_cli_bigids_${run}`;
    const big = new PostgresAuditLog(pool, { table });
    await big.setup();
    try {
      await pool.query(`ALTER TABLE "${table}" ALTER COLUMN id RESTART WITH 9007199254740995`);
      await pool.query(
        `INSERT INTO "${table}" (writer, seq, at, decision, namespace) VALUES (gen_random_uuid(), 1, now(), 'new', 'x')`,
      );
      for (const start of [[], ['--from-start']]) {
        const failed = await hookgate(
          ['watch', '--postgres', POSTGRES_URL, '--table', table, ...start],
          { killAfterMs: 20_000 },
        );
        expect(failed.code).toBe(1);
        expect(failed.stderr).toMatch(/an id past 2\^53 - 1 \(9007199254740995\)/);
      }
    } finally {
      await big.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    }
  });

  it('Ctrl-C while a poll waits for a lock cancels it on the server, and exits 0', async () => {
    const table = `hookgate_cli_locked_${run}`;
    const locked = new PostgresAuditLog(pool, { table });
    await locked.setup();
    const holder = await pool.connect();
    try {
      const watcher = watch(['--table', table, '--timeout', '60000']);
      await watcher.until(() => watcher.stderr().includes('watching'));
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE`);
      const waiting = async () =>
        Number(
          (
            await pool.query(
              `SELECT count(*) AS n FROM pg_stat_activity
               WHERE application_name = 'hookgate-cli' AND state = 'active' AND query LIKE $1`,
              [`%${table}%`],
            )
          ).rows[0].n,
        );
      await vi.waitFor(async () => expect(await waiting()).toBeGreaterThan(0), {
        timeout: 10_000,
        interval: 50,
      });
      expect((await watcher.stop('SIGINT')).code).toBe(0);
      expect(await waiting()).toBe(0);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
      await locked.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    }
  });

  it('Ctrl-C while connecting to a server that does not answer exits 0 at once', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const watcher = hookgateRunning([
        'watch',
        '--postgres',
        `postgres://postgres@127.0.0.1:${port}/test`,
        '--timeout',
        '30000',
      ]);
      started.push(watcher);
      await vi.waitFor(() => expect(sockets.length).toBeGreaterThan(0), {
        timeout: 10_000,
        interval: 50,
      });
      const sent = Date.now();
      const stopped = await watcher.stop('SIGINT');
      expect(stopped.code).toBe(0);
      expect(Date.now() - sent).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('reads a full page (1000 rows) and polls again at once, not after --interval', async () => {
    const namespace = ns('watch-pages');
    const since = await lastId();
    await pool.query(
      `INSERT INTO "${LOG}" (writer, seq, at, decision, namespace, key)
       SELECT gen_random_uuid(), 1, now(), 'new', $1, 'evt:page-' || n
       FROM generate_series(1, 2500) AS n`,
      [namespace],
    );
    // An interval far longer than the wait: only polls that follow at once can read it all.
    const watcher = watch([
      '--json',
      '--since-id',
      since,
      '--namespace',
      namespace,
      '--interval',
      '600000',
    ]);
    await watcher.until(() => watcher.lines().length >= 2500, 20_000);
    expect(new Set(printed(watcher).map(({ key }) => key)).size).toBe(2500);
    expect((await watcher.stop('SIGINT')).code).toBe(0);
  });

  it('a closed stdout (watch | head -n 1) stops it with exit 0, not a hang or an EPIPE crash', async () => {
    const namespace = ns('watch-head');
    const watcher = await watchFromNow(namespace);
    await insert(pool, namespace, 'evt:read');
    await watcher.until(() => watcher.lines().length >= 1);
    watcher.closeStdout();
    let exited = false;
    void watcher.exited.then(() => {
      exited = true;
    });
    // Only a write finds the reader gone: write decisions until it has exited.
    for (let i = 0; i < 100 && !exited; i++) {
      await insert(pool, namespace, `evt:unread-${i}`);
      await sleep(50);
    }
    // A watch that still ran would end here with code null.
    const stopped = await watcher.stop('SIGKILL');
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toMatch(/^hookgate: watching [^\n]+ \(Ctrl-C stops\)\n$/);
  });

  /** Run `during` while another transaction holds the log locked against every read. */
  const whileLogLocked = async (during: () => Promise<void>) => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE "${LOG}" IN ACCESS EXCLUSIVE MODE`);
      await during();
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  };
  /** Once the log is free: the watch says so, prints a new row, and SIGINT stops it with 0. */
  const readsAgain = async (watcher: Running, namespace: string): Promise<string> => {
    await watcher.until(() => watcher.stderr().includes('polling again'));
    await insert(pool, namespace, 'evt:after');
    await watcher.until(() => watcher.lines().length >= 1);
    expect(printed(watcher).map(({ key }) => key)).toEqual(['evt:after']);
    const stopped = await watcher.stop('SIGINT');
    expect(stopped.code).toBe(0);
    return stopped.stderr;
  };

  it('a poll whose connection is lost is one line on stderr; it polls again, and says when it reads again', async () => {
    const namespace = ns('watch-lost');
    const watcher = await watchFromNow(namespace, '--timeout', '60000');
    /** The pid of a poll of the watch waiting for the lock on the log, other than `seen`. */
    const waitingPoll = (seen: readonly number[]) =>
      vi.waitFor(
        async () => {
          const { rows } = await pool.query(
            `SELECT pid FROM pg_stat_activity
             WHERE application_name = 'hookgate-cli' AND wait_event_type = 'Lock'
               AND query LIKE $1 AND NOT pid = ANY($2::int[])`,
            [`%${LOG}%`, seen],
          );
          expect(rows).toHaveLength(1);
          return rows[0].pid as number;
        },
        { timeout: 10_000, interval: 20 },
      );
    // Polls wait on the lock, so that each can be ended on the server while it runs.
    await whileLogLocked(async () => {
      const seen: number[] = [];
      for (let failure = 0; failure < 2; failure++) {
        seen.push(await waitingPoll(seen));
        await pool.query('SELECT pg_terminate_backend($1)', [seen.at(-1)]);
      }
      await waitingPoll(seen); // tried again after both failures, on a new connection
      expect(watcher.stderr()).not.toMatch(/polling again/);
    });
    const stderr = await readsAgain(watcher, namespace);
    // Two failures in a row with the same error: said once.
    expect(stderr.split('\n').slice(1)).toEqual([
      'hookgate: a poll failed: terminating connection due to administrator command; trying again every 50 ms',
      'hookgate: polling again',
      '',
    ]);
  });

  it('a poll that times out is one line on stderr; it polls again, and says when it reads again', async () => {
    const namespace = ns('watch-timeout');
    const watcher = await watchFromNow(namespace, '--timeout', '200');
    await whileLogLocked(() => watcher.until(() => watcher.stderr().includes('a poll failed')));
    const [banner, ...lines] = (await readsAgain(watcher, namespace)).split('\n');
    expect(banner).toMatch(/^hookgate: watching /);
    // The server's statement_timeout or pg's query_timeout, whichever says it first.
    expect(lines.slice(0, -2)).not.toHaveLength(0);
    for (const line of lines.slice(0, -2)) {
      expect(line).toMatch(
        /^hookgate: a poll failed: (canceling statement due to statement timeout|Query read timeout); trying again every 50 ms$/,
      );
    }
    expect(lines.slice(-2)).toEqual(['hookgate: polling again', '']);
  });

  it('waits for at most 10,000 skipped ids: the oldest are dropped, and said so', async () => {
    const table = `hookgate_cli_gaps_${run}`;
    const gaps = new PostgresAuditLog(pool, { table });
    await gaps.setup();
    /** Rows at these ids, in one transaction, keyed `evt:<id>`. */
    const at = (ids: number[]) =>
      pool.query(
        `INSERT INTO "${table}" (id, writer, seq, at, decision, namespace, key)
         OVERRIDING SYSTEM VALUE
         SELECT id, gen_random_uuid(), 1, now(), 'new', 'x', 'evt:' || id
         FROM unnest($1::bigint[]) AS id`,
        [ids],
      );
    try {
      // 20,000 skipped ids: the newest 10,000 (10,001 to 20,000) are waited for, silently;
      // then 3 more (20,002 to 20,004), and the 3 oldest are dropped.
      await at([1, 20_001, 20_005]);
      const watcher = watch(['--table', table, '--json', '--from-start', '--interval', '50']);
      await watcher.until(() => watcher.lines().length >= 3);
      // Late rows: below the 10,000 kept, dropped, kept; and a row after them all.
      await at([5_000, 10_002, 10_004, 20_006]);
      await watcher.until(() => watcher.lines().length >= 5);
      // The marker is read in the same poll as every late row: nothing else is coming.
      expect(printed(watcher).map(({ key }) => key)).toEqual([
        'evt:1',
        'evt:20001',
        'evt:20005',
        'evt:10004',
        'evt:20006',
      ]);
      const stopped = await watcher.stop('SIGINT');
      expect(stopped.code).toBe(0);
      expect(stopped.stderr).toBe(
        `hookgate: watching ${table} for every decision (Ctrl-C stops)\n` +
          'hookgate: no longer waiting for decision 3 ids from 10001 to 10003: more than 10000 ids were waiting; a row that commits there later is not printed\n',
      );
    } finally {
      await gaps.close();
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    }
  });

  it('a decision log table that does not exist is exit 1, naming PostgresAuditLog.setup()', async () => {
    const table = `hookgate_cli_nolog_${run}`;
    for (const start of [[], ['--from-start']]) {
      const failed = await hookgate([
        'watch',
        '--postgres',
        POSTGRES_URL,
        '--table',
        table,
        ...start,
      ]);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toBe('');
      expect(failed.stderr).toMatch(
        new RegExp(
          `^hookgate: the decision log table ${table} does not exist: create it with PostgresAuditLog\\.setup\\(\\) \\(@hookgate/pg\\), or name yours with --table\\n$`,
        ),
      );
    }
  });

  it('an unreachable server is exit 1', async () => {
    const failed = await hookgate(['watch', '--postgres', 'postgres://postgres@127.0.0.1:1/test']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^hookgate: cannot connect to PostgreSQL at 127\.0\.0\.1:1\/test: /,
    );
  });
});

describe('hookgate usage', () => {
  const unreachable = ['--redis', 'redis://127.0.0.1:1'];
  const unreachablePg = ['--postgres', 'postgres://postgres@127.0.0.1:1/test'];

  it('echoes a hostile argument with its control characters escaped, on one line', async () => {
    const refused = await hookgate(['inspect', 'evt:\u001b[2J\n\u009b31m', ...unreachable]);
    expect(refused.code).toBe(2);
    for (const raw of ['\u001b', '\u009b']) expect(refused.stderr).not.toContain(raw);
    expect(refused.stderr.split('\n')).toEqual([
      expect.stringMatching(/^hookgate: .*evt:\\u001b\[2J\\n\\u009b31m/),
      "Run 'hookgate inspect --help' for usage.",
      '',
    ]);
    const unknown = await hookgate(['\u001b]0;x\u0007']);
    expect(unknown.stderr).toMatch(/^hookgate: unknown command '\\u001b\]0;x\\u0007'/);
  });

  it('an unknown command is exit 2 with a pointer to the usage', async () => {
    const unknown = await hookgate(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "hookgate: unknown command 'frobnicate' (commands: inspect, forget, stats, watch)\nRun 'hookgate --help' for usage.\n",
    );
    const none = await hookgate([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^hookgate: no command given\n/);
  });

  // Each is refused before any connection: the unreachable URL would otherwise be exit 1.
  it.each([
    [['inspect', 'evt_1', ...unreachable, '--bogus'], /Unknown option '--bogus'/],
    [['inspect', ...unreachable], /inspect takes one <id\|key> \(got 0\)/],
    [['forget', 'evt_1', ...unreachable], /forget asks for confirmation: pass --yes when stdin/],
    [['forget', 'a', 'b', '--yes', ...unreachable], /forget takes one <id\|key> \(got 2\)/],
    [['stats', 'extra', ...unreachable], /stats takes no argument/],
    [['inspect', 'dig:abc', ...unreachable], /dig:abc is not an event key/],
    [['forget', 'evt:has space', '--yes', ...unreachable], /evt:has space is not an event key/],
    [['inspect', 'evt_1'], /give exactly one of --redis <url> and --postgres <url>/],
    [
      ['inspect', 'evt_1', ...unreachable, '--postgres', 'postgres://127.0.0.1:1/x'],
      /give exactly one of/,
    ],
    [
      ['inspect', 'evt_1', '--redis', '127.0.0.1:6379'],
      /--redis must be a redis:\/\/ or rediss:\/\//,
    ],
    [['inspect', 'evt_1', '--postgres', 'redis://x'], /--postgres must be a postgres:\/\/ or/],
    [
      ['inspect', 'evt_1', ...unreachable, '--timeout', '5s'],
      /--timeout must be a positive integer/,
    ],
    [['inspect', 'evt_1', ...unreachable, '--namespace', 'a:b'], /option `namespace` must be/],
    [['inspect', 'evt_1', ...unreachable, '--table', 't'], /--table goes with --postgres only/],
    [
      ['stats', '--postgres', 'postgres://127.0.0.1:1/x', '--limit', '5'],
      /--limit goes with --redis/,
    ],
    [['stats', ...unreachable, '--limit', '0'], /--limit must be a positive integer/],
    [
      ['watch', '--redis', REDIS_URL],
      /watch needs the PostgreSQL decision log \(--postgres <url>\): Redis stores keep no log/,
    ],
    [['watch'], /watch reads the decision log of a PostgresAuditLog: give --postgres <url>/],
    [['watch', 'extra', ...unreachablePg], /watch takes no argument/],
    [['watch', ...unreachablePg, '--from-start', '--since-id', '5'], /not both/],
    [['watch', ...unreachablePg, '--since-id', '1.5'], /--since-id must be a whole number/],
    [['watch', ...unreachablePg, '--interval', '0'], /--interval must be a positive integer/],
    [['watch', ...unreachablePg, '--decision', 'done,nope'], /--decision 'nope' is not a/],
    [['watch', ...unreachablePg, '--table', 'Decisions'], /--table must be a lower-case/],
    [['watch', ...unreachablePg, '--namespace', 'a:b'], /--namespace must be 1 to 64/],
    [['watch', ...unreachablePg, '--key', ' '], /--key must be an event key/],
    [['watch', ...unreachablePg, '--key', 'evt:a b'], /--key evt:a b is not an event key/],
    [['watch', ...unreachablePg, '--key', 'dig:xyz'], /--key dig:xyz is not an event key/],
    [['watch', ...unreachablePg, '--key', 'evt:'], /--key evt: is not an event key/],
    [['watch', '--postgres', 'redis://x'], /--postgres must be a postgres:\/\/ or/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const refused = await hookgate(args);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(message);
    expect(refused.stderr).toMatch(
      /\nRun 'hookgate (inspect |forget |stats |watch )?--help' for usage\.\n$/,
    );
  });

  it('a key with nothing after evt: is a usage error (exit 2), found before connecting', async () => {
    const refused = await hookgate(['inspect', 'evt:', '--redis', REDIS_URL]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/evt: is not an event key/);
  });

  it('--help prints the usage of the binary and of each command, and exits 0', async () => {
    const top = await hookgate(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^hookgate: /);
    expect(top.stdout).toContain('hookgate inspect <id|key> (--redis <url> | --postgres <url>)');
    expect(top.stdout).toContain('3  no record of the event');
    expect((await hookgate(['help'])).stdout).toBe(top.stdout);
    for (const command of ['inspect', 'forget', 'stats', 'watch']) {
      const help = await hookgate([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: hookgate ${command} `));
      expect(help.stdout).toContain('--namespace <ns>');
      expect((await hookgate([command, '-h'])).stdout).toBe(help.stdout);
      expect((await hookgate(['help', command])).stdout).toBe(help.stdout);
    }
    const inspect = await hookgate(['inspect', '--help']);
    expect(inspect.stdout).toContain('evt:… or dig:…), or else a\nprovider');
    const forget = await hookgate(['forget', '--help']);
    expect(forget.stdout).toContain('-y, --yes');
    const stats = await hookgate(['stats', '--help']);
    expect(stats.stdout).toContain('SCAN MATCH <namespace>:* COUNT 1000');
    expect(top.stdout).toContain('hookgate watch --postgres <url>');
    const watch = await hookgate(['watch', '--help']);
    expect(watch.stdout).toContain('--from-start');
    expect(watch.stdout).toContain('PostgresAuditLog.setup() creates it');
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    const printed = await hookgate(['--version']);
    expect(printed).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

import {
  type AdvanceRequest,
  type AdvanceState,
  type ClaimState,
  type ClaimStore,
  Deadlines,
  foreignValueError,
  LeaseLostError,
  optionError,
  type StoredRecord,
  storeError,
  type WebhookEvent,
} from '@hookgate/core';
import {
  checkClient,
  inTransaction,
  type PgPool,
  type PgPoolClient,
  type PgQueryable,
  type PgResult,
  pastDeadline,
  statementNames,
  tableName,
} from './client.js';
import { statements } from './sql.js';

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /**
   * The table of claims, done records and watermarks: a lower-case name, optionally
   * schema-qualified (`hooks.claims`). `setup()` creates it.
   * @default 'hookgate_claims'
   */
  table?: string;
  /**
   * The deadline of every operation, in ms. An operation without an answer by then (the server
   * down or paused, a row lock held elsewhere, a pool with no free connection) rejects with
   * `StoreUnavailableError`. The statement is not cancelled: PostgreSQL may still apply it, so
   * its outcome is unknown (as with any timeout). Set `statement_timeout` on a pool you
   * dedicate to hookgate to make the server give up too.
   * @default 2000
   */
  timeoutMs?: number;
}

/** The operations with a statement of their own (each prepared once per connection). */
const OPERATIONS = [
  'claimNew',
  'claim',
  'doneOwn',
  'done',
  'release',
  'extend',
  'advance',
  'releaseHold',
  'extendHold',
  'inspect',
  'forget',
  'sweep',
  'landed',
] as const;
type Operation = (typeof OPERATIONS)[number];

/** How many expired rows one `sweep` statement deletes. */
const SWEEP_BATCH = 1_000;
/** How many times a claim is retried when a concurrent commit hid its row from the read. */
const CLAIM_ATTEMPTS = 5;

/**
 * A {@link ClaimStore} in PostgreSQL, over a node-postgres (`pg` 8) `Pool` you create and own.
 * Claims survive restarts and failovers of anything but the database, and `transaction()`
 * makes a handler's database effects happen exactly once.
 *
 * Every write is decided by one statement on one row, by the database clock
 * (`clock_timestamp()`), never by a read before it. `claim` is an
 * `INSERT … ON CONFLICT DO NOTHING` (a new delivery), then when that finds a row a read of it
 * that locks nothing (a duplicate), and only when the row expired the deciding
 * `INSERT … ON CONFLICT … DO UPDATE … WHERE <expired>`. `done` is an `UPDATE` of the claim's
 * own row, followed by the statement that decides only when that row is no longer its own. Each
 * operation runs under one deadline. Expired rows behave as absent ones; `sweep()` deletes them.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { PostgresStore } from '@hookgate/pg';
 *
 * const store = new PostgresStore(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * await store.setup();
 * ```
 */
export class PostgresStore implements ClaimStore {
  readonly #client: PgQueryable;
  readonly #sql: ReturnType<typeof statements>;
  readonly #names: Record<Operation, string>;
  readonly #lockKey: string;
  readonly #deadlines: Deadlines;
  readonly #timeoutMs: number;
  /** Claims whose done a `transaction()` committed: the gate's `done` that follows is free. */
  readonly #fenced = new Set<string>();

  /**
   * @param client - a `pg` `Pool` (a `Client` will do for everything but `transaction`); you
   * keep it, and end it yourself
   * @throws HookgateError `INVALID_OPTIONS` for a client without `query`, a bad table name or a
   * bad `timeoutMs`
   */
  constructor(client: PgQueryable | PgPool, options: PostgresStoreOptions = {}) {
    const { table = 'hookgate_claims', timeoutMs = 2000 } = options;
    checkClient('PostgresStore', client, false);
    const { quoted, bare } = tableName('PostgresStore', table);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
      throw optionError('PostgresStore', 'timeoutMs', 'must be a positive integer of milliseconds');
    }
    this.#client = client;
    this.#sql = statements(quoted, `"${bare}_expires_at"`);
    this.#names = statementNames(quoted, OPERATIONS);
    this.#lockKey = `hookgate.setup:${table}`;
    this.#deadlines = new Deadlines(timeoutMs);
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Create the table and its index if they are missing. Safe to run on every start, and from
   * several processes at once (an advisory lock serialises them). The SQL is in the adapter's
   * docs, for teams that run their own migrations.
   */
  async setup(): Promise<void> {
    try {
      // One simple-protocol query: its statements run as one transaction, under the lock.
      const sql = this.#sql.setup(this.#lockKey, this.#timeoutMs);
      await this.#deadlines.guard(this.#client.query(sql));
    } catch (error) {
      throw storeError('PostgresStore', 'setup', error);
    }
  }

  /**
   * Delete expired rows (claims, done records, watermarks), a thousand per statement, until
   * none is left; rows another session has locked are skipped. Run it on an interval (see the
   * adapter's docs); expired rows are ignored meanwhile, so nothing depends on it but space.
   * Each statement has the store's deadline (`timeoutMs`), as `setup` has.
   * @returns how many rows were deleted
   * @throws StoreUnavailableError when a statement failed or passed its deadline (a table
   * locked elsewhere); the rows deleted before it stay deleted
   */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      let deleted: number;
      try {
        const result = this.#send(this.#client, 'sweep', [SWEEP_BATCH]);
        deleted = (await this.#deadlines.guard(result)).rowCount ?? 0;
      } catch (error) {
        throw storeError('PostgresStore', 'sweep', error);
      }
      total += deleted;
      if (deleted < SWEEP_BATCH) return total;
    }
  }

  /**
   * Wrap a handler so that it runs in one transaction that also marks its claim done, fenced by
   * the owner token: `gate.run(delivery, store.transaction(async (event, client) => …))`. Run
   * every statement of the effect on `client`. At the end the claim row is marked done in the
   * same transaction if it is still ours, or expired with nobody else holding it; when another
   * worker holds it, the transaction rolls back and `run` rejects with `LeaseLostError`. So the
   * handler's database effects happen exactly once, even when its lease expired and another
   * worker took over. The claim row is not locked while the handler runs. A handler that
   * throws rolls back, and the gate fails the claim (releases it, or retains it with
   * `onFailure: 'retain'`). A `COMMIT` whose answer is lost is
   * checked on another connection: a transaction that committed resolves as one (no false
   * `lease-lost`); one that did not, or whose outcome the database cannot tell, rejects with
   * the `COMMIT`'s `StoreUnavailableError`.
   *
   * `client` is the connection `pool.connect()` returned (a `pg` `PoolClient`): a query builder
   * writes the effect through it, `drizzle(client)`, or a Kysely whose pool hands out that one
   * connection and releases nothing (see the adapter's docs). Never open the builder's own
   * transaction on it: its `COMMIT` would commit this one before the fence.
   *
   * Needs a `Pool` (`connect()`).
   * @throws HookgateError `INVALID_OPTIONS` at once, when the store was given no `Pool`
   */
  transaction<TPayload, TResult>(
    handler: (
      event: WebhookEvent<TPayload>,
      client: PgPoolClient,
    ) => TResult | PromiseLike<TResult>,
  ): (event: WebhookEvent<TPayload>) => Promise<TResult> {
    checkClient('PostgresStore', this.#client, true);
    const pool = this.#client as PgPool;
    return async (event) => {
      const lease = event.lease;
      if (lease === undefined) {
        throw optionError(
          'PostgresStore',
          'transaction',
          'wraps a handler of gate.run (the event has no lease)',
        );
      }
      const work = async (client: PgPoolClient, abandon: () => void) => {
        const value = await handler(event, client);
        const values = [lease.key, lease.token, lease.doneTtlMs, lease.fingerprint ?? null];
        let fence: PgResult;
        try {
          fence = await this.#guarded('done', (gone) => this.#markDone(client, values, gone));
        } catch (error) {
          // Past its deadline, the fence may still wait on the claim row's lock: close the
          // connection instead of queueing a ROLLBACK behind it.
          if (pastDeadline(error)) abandon();
          throw error;
        }
        if (!this.#decided('done', lease.key, fence, 0))
          throw new LeaseLostError(lease.key, 'done');
        return value;
      };
      // A COMMIT whose outcome is unknown happened when the claim row is done by this lease:
      // only this transaction's fence writes that.
      const landed = async () => {
        const { rows } = await this.#query('landed', [lease.key, lease.token]);
        return rows[0]?.done === true;
      };
      const result = await inTransaction('PostgresStore', pool, this.#deadlines, work, landed);
      this.#remember(lease.key, lease.token);
      return result;
    };
  }

  async claim(
    key: string,
    token: string,
    ttlMs: number,
    fingerprint?: string,
  ): Promise<ClaimState> {
    const values = [key, token, ttlMs, fingerprint ?? null];
    const row = await this.#guarded('claim', (gone) => this.#claimRow(values, gone));
    // No row: every attempt's row was moved by a concurrent commit; come back later.
    return row === undefined ? 'processing' : claimAnswer(key, row, token, fingerprint);
  }

  /**
   * The row a claim leaves (`kind` `a` when it acquired the key), under one deadline: `claimNew`,
   * the insert of a key with no row (a new delivery); else `inspect`, the read of a live row (a
   * duplicate), which locks nothing, where the deciding statement would lock the row and its
   * commit wait for a WAL flush; else `claim`, which takes an expired row over or reads what it
   * found. `undefined` when a concurrent commit hid the row from every attempt. Once `gone` says
   * the deadline passed, it sends nothing more.
   */
  async #claimRow(
    values: unknown[],
    gone: () => boolean,
  ): Promise<Record<string, unknown> | undefined> {
    const client = this.#client;
    if ((await this.#send(client, 'claimNew', values)).rowCount === 1) return ACQUIRED;
    if (gone()) return undefined;
    const live = (await this.#send(client, 'inspect', [values[0]])).rows[0];
    if (live !== undefined) return live;
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS && !gone(); attempt++) {
      const row = (await this.#send(client, 'claim', values)).rows[0];
      // No row, or an expired one: a concurrent commit moved the row after this statement's
      // snapshot was taken. The next statement sees it.
      if (row !== undefined && row.live === true) return row;
    }
    return undefined;
  }

  async done(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<boolean> {
    if (this.#fenced.delete(`${key} ${token}`)) return true; // a transaction committed it
    const values = [key, token, ttlMs, fingerprint ?? null];
    const result = await this.#guarded('done', (gone) =>
      this.#markDone(this.#client, values, gone),
    );
    return this.#decided('done', key, result, 0);
  }

  /**
   * Mark a claim done, on `client`, under one deadline: `doneOwn`, the `UPDATE` of the row when it
   * is still this token's (nearly always), else `done`, which decides every other case. Not
   * once `gone` says the deadline passed: in a transaction, the `ROLLBACK` is queued behind
   * `doneOwn` by then, and a `done` after it would mark the claim done in a transaction of its
   * own, with the effect rolled back.
   * @returns a result with a `code` row, as `done` answers
   */
  async #markDone(client: PgQueryable, values: unknown[], gone: () => boolean): Promise<PgResult> {
    if ((await this.#send(client, 'doneOwn', values)).rowCount === 1) return DONE;
    if (gone()) return DONE; // nobody reads it: the operation has rejected
    return this.#send(client, 'done', values);
  }

  async release(key: string, token: string): Promise<boolean> {
    // Code 2: the row was this token's claim when the statement began, and a concurrent commit
    // changed it before the `DELETE` could (another release of the same claim, as the gate's
    // retry of a release that timed out, deleted it).
    return this.#decided('release', key, await this.#askTwice('release', [key, token], 1), 1);
  }

  async extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#code('extend', key, [key, token, ttlMs], 0);
  }

  async advance(key: string, request: AdvanceRequest): Promise<AdvanceState> {
    const { at, eventKey, token, holdMs, ttlMs, ties } = request;
    // Code 2, held, or no row: a concurrent commit may have moved the watermark since the
    // statement began (past this event: it is stale, not held). No row twice: it moved once
    // more; come back later.
    const values = [key, at, eventKey, token, holdMs, ttlMs, ties];
    const code = codeOf(await this.#askTwice('advance', values, 2), 2);
    if (code === -1) throw foreignValueError('PostgresStore', 'advance', key);
    return code === 1 ? 'applied' : code === 0 ? 'stale' : 'held';
  }

  async releaseHold(key: string, token: string): Promise<boolean> {
    return this.#code('releaseHold', key, [key, token], 1);
  }

  async extendHold(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#code('extendHold', key, [key, token, ttlMs], 0);
  }

  async inspect(key: string): Promise<StoredRecord> {
    const row = (await this.#query('inspect', [key])).rows[0];
    if (row === undefined) return { kind: 'absent' };
    const ttlMs = Math.max(0, Number(row.ttl_ms));
    if (row.kind === 'w') {
      return { kind: 'watermark', at: Number(row.at), eventKey: String(row.event_key), ttlMs };
    }
    const kind = row.kind === 'p' ? 'processing' : 'done';
    const fingerprint = row.fingerprint as string | null;
    return fingerprint === null
      ? { kind, token: String(row.token), ttlMs }
      : { kind, token: String(row.token), fingerprint, ttlMs };
  }

  async forget(key: string): Promise<boolean> {
    const { rows } = await this.#query('forget', [key]);
    return rows[0]?.live === true;
  }

  /** Run a statement that answers one code; `none` is what no row means for it. */
  async #code(
    operation: Operation,
    key: string,
    values: unknown[],
    none: number,
  ): Promise<boolean> {
    return this.#decided(operation, key, await this.#query(operation, values), none);
  }

  /** A statement's code: `true` for 1; -1 (a value the store did not write) throws. */
  #decided(operation: Operation, key: string, result: PgResult, none: number): boolean {
    const code = codeOf(result, none);
    if (code === -1) throw foreignValueError('PostgresStore', operation, key);
    return code === 1;
  }

  /**
   * The operation's own statement, sent once more (under the same deadline) when it answers
   * code 2 (`none` when it has no row): the read that says why a statement changed nothing sees
   * the statement's snapshot, from before a concurrent commit that its write waited for; a new
   * statement sees what that commit left.
   */
  #askTwice(operation: 'release' | 'advance', values: unknown[], none: number): Promise<PgResult> {
    return this.#guarded(operation, async (gone) => {
      const first = await this.#send(this.#client, operation, values);
      if (codeOf(first, none) !== 2 || gone()) return first;
      return this.#send(this.#client, operation, values);
    });
  }

  /** The operation's own statement, under its deadline. */
  #query(operation: Operation, values: unknown[]): Promise<PgResult> {
    return this.#guarded(operation, () => this.#send(this.#client, operation, values));
  }

  /** `statement` on `client`, by name: prepared once per connection. No deadline of its own. */
  #send(client: PgQueryable, statement: Operation, values: unknown[]): Promise<PgResult> {
    return client.query({ name: this.#names[statement], text: this.#sql[statement], values });
  }

  /**
   * `work` under the operation's deadline; any failure is a `StoreUnavailableError`. `work` is
   * given `gone`, which says whether the operation has failed already (its deadline passed): a
   * `work` of several statements sends no more once it has.
   */
  async #guarded<T>(operation: Operation, work: (gone: () => boolean) => Promise<T>): Promise<T> {
    let failed = false;
    try {
      return await this.#deadlines.guard(work(() => failed));
    } catch (error) {
      failed = true;
      throw storeError('PostgresStore', operation, error);
    }
  }

  /** Remember a fenced commit for the gate's `done`, which follows at once; bounded. */
  #remember(key: string, token: string): void {
    if (this.#fenced.size >= 10_000) this.#fenced.delete(this.#fenced.values().next().value!);
    this.#fenced.add(`${key} ${token}`);
  }
}

/** What `done` answers for a row it marked, given when `doneOwn` marked it. */
const DONE: PgResult = Object.freeze({ rows: [Object.freeze({ code: 1 })], rowCount: 1 });

/** The row of a claim that acquired its key. */
const ACQUIRED = Object.freeze({ kind: 'a', live: true });

/** What `claim` answers for the row it left: `kind` (`a` acquired), `token`, `fingerprint`. */
function claimAnswer(
  key: string,
  row: Record<string, unknown>,
  token: string,
  fingerprint: string | undefined,
): ClaimState {
  if (row.kind === 'a') return 'acquired';
  if (row.kind !== 'p' && row.kind !== 'd') throw foreignValueError('PostgresStore', 'claim', key);
  const stored = row.fingerprint as string | null;
  if (fingerprint !== undefined && stored !== null && stored !== fingerprint) {
    return { state: 'conflict', fingerprint: stored };
  }
  if (row.kind === 'd') return 'done';
  return row.token === token ? 'acquired' : 'processing';
}

/** The `code` column of a statement's single row, or `none` when it returned no row. */
function codeOf(result: PgResult, none: number): number {
  const row = result.rows[0];
  return row === undefined ? none : Number(row.code);
}

import { alreadyDone, Deadlines, optionError, storeError, type WebhookEvent } from '@hookgate/core';
import {
  checkClient,
  inTransaction,
  lockTimeout,
  type PgPool,
  type PgPoolClient,
  type PgResult,
  pastDeadline,
  positiveMs,
  statementNames,
  tableName,
} from './client.js';

/** Options of {@link PostgresLedger}. */
export interface PostgresLedgerOptions {
  /**
   * The table of events done: a lower-case name, optionally schema-qualified. `setup()`
   * creates it.
   * @default 'hookgate_ledger'
   */
  table?: string;
  /**
   * The deadline of the ledger's own statements (checking a connection out, `BEGIN`, recording
   * the key, `COMMIT`), in ms; the handler's statements are yours.
   * @default 2000
   */
  timeoutMs?: number;
}

/** How many rows one `prune` statement deletes. */
const PRUNE_BATCH = 1_000;

/**
 * The durable record of events done, in PostgreSQL, behind any store (Redis in front for
 * speed, PostgreSQL as the truth): `ledger.transaction(handler)` records the event's key in the
 * handler's own transaction, so the effects and the record commit together or not at all. When
 * the key is already there (Redis lost its record: a failover, a flush, an expired done TTL),
 * the handler does not run, the transaction does nothing, and `run` resolves `duplicate`.
 *
 * @example
 * ```ts
 * const ledger = new PostgresLedger(pool);
 * await ledger.setup();
 * await gate.run(delivery, ledger.transaction(async (event, client) => {
 *   await client.query('INSERT INTO payments (id, amount) VALUES ($1, $2)', [...]);
 * }));
 * ```
 */
export class PostgresLedger {
  readonly #pool: PgPool;
  readonly #table: string;
  readonly #index: string;
  readonly #lockKey: string;
  readonly #deadlines: Deadlines;
  readonly #timeoutMs: number;
  readonly #names: Record<'record' | 'prune' | 'landed', string>;

  /**
   * @param pool - a `pg` `Pool`; you keep it, and end it yourself
   * @throws HookgateError `INVALID_OPTIONS` for a pool without `query` and `connect` (or a
   * `Client`), a bad table name, or a `timeoutMs` that is not a positive integer
   */
  constructor(pool: PgPool, options: PostgresLedgerOptions = {}) {
    const { table = 'hookgate_ledger', timeoutMs = 2000 } = options;
    checkClient('PostgresLedger', pool, true);
    const { quoted, bare } = tableName('PostgresLedger', table);
    this.#timeoutMs = positiveMs('PostgresLedger', 'timeoutMs', timeoutMs);
    this.#deadlines = new Deadlines(this.#timeoutMs);
    this.#names = statementNames(quoted, ['record', 'prune', 'landed']);
    this.#pool = pool;
    this.#table = quoted;
    this.#index = `"${bare}_done_at"`;
    this.#lockKey = `hookgate.setup:${table}`;
  }

  /** Create the table and its index if they are missing; safe on every start, and concurrently. */
  async setup(): Promise<void> {
    try {
      const created = this.#pool.query(`
        SET LOCAL lock_timeout = ${lockTimeout(this.#timeoutMs)};
        SELECT pg_advisory_xact_lock(hashtext('${this.#lockKey}'));
        CREATE TABLE IF NOT EXISTS ${this.#table} (
          key     text        PRIMARY KEY,
          done_at timestamptz NOT NULL DEFAULT clock_timestamp()
        );
        CREATE INDEX IF NOT EXISTS ${this.#index} ON ${this.#table} (done_at);`);
      await this.#deadlines.guard(created);
    } catch (error) {
      throw storeError('PostgresLedger', 'setup', error);
    }
  }

  /**
   * Wrap a handler of `gate.run` so that it runs in one transaction that first records the
   * event's key (`event.lease.key`, namespace included). If the key is already recorded, the
   * transaction rolls back, the handler does not run, and `run` resolves `duplicate` (the gate
   * records it done in its store). A second delivery running at the same moment (the gate keeps
   * it out unless the first one's claim was lost) waits on the first one's row: it finds it
   * when the first commits within `timeoutMs`, and otherwise rejects with a
   * `StoreUnavailableError` without running the handler, so the provider retries (its
   * connection is closed and its insert cancelled, which ends its transaction on the server,
   * rather than queueing a `ROLLBACK` behind the insert that still waits). A handler that
   * throws rolls back its effects and the record.
   * A `COMMIT` whose answer is lost is checked on another connection: when the key is recorded,
   * the transaction committed and resolves as one.
   */
  transaction<TPayload, TResult>(
    handler: (
      event: WebhookEvent<TPayload>,
      client: PgPoolClient,
    ) => TResult | PromiseLike<TResult>,
  ): (event: WebhookEvent<TPayload>) => Promise<TResult> {
    return async (event) => {
      const key = event.lease?.key;
      if (key === undefined) {
        throw optionError(
          'PostgresLedger',
          'transaction',
          'wraps a handler of gate.run (the event has no lease)',
        );
      }
      const work = async (client: PgPoolClient, abandon: () => void) => {
        let recorded: PgResult;
        try {
          recorded = await this.#deadlines.guard(
            client.query({
              name: this.#names.record,
              text: `INSERT INTO ${this.#table} (key) VALUES ($1) ON CONFLICT (key) DO NOTHING`,
              values: [key],
            }),
          );
        } catch (error) {
          // Past its deadline, the insert may still wait on another delivery's row: close the
          // connection instead of queueing a ROLLBACK behind it.
          if (pastDeadline(error)) abandon();
          throw storeError('PostgresLedger', 'record', error);
        }
        if (recorded.rowCount === 0) throw alreadyDone();
        return handler(event, client);
      };
      // A COMMIT whose outcome is unknown happened when the key is in the ledger: only this
      // transaction inserts it (a delivery that found it there did not get to COMMIT).
      const landed = async () => {
        const { rows } = await this.#deadlines.guard(
          this.#pool.query({
            name: this.#names.landed,
            text: `SELECT 1 FROM ${this.#table} WHERE key = $1`,
            values: [key],
          }),
        );
        return rows.length === 1;
      };
      return inTransaction('PostgresLedger', this.#pool, this.#deadlines, work, landed);
    };
  }

  /**
   * Delete the records of events done more than `olderThanMs` ago, a thousand per statement.
   * Keep them longer than any replay you accept: a pruned event runs again if it comes back.
   * Each statement has the ledger's deadline (`timeoutMs`), as `setup` has.
   * @returns how many rows were deleted
   * @throws StoreUnavailableError when a statement failed or passed its deadline
   * @throws HookgateError `INVALID_OPTIONS` when `olderThanMs` is not a positive integer
   */
  async prune(olderThanMs: number): Promise<number> {
    positiveMs('PostgresLedger', 'olderThanMs', olderThanMs);
    let total = 0;
    for (;;) {
      let deleted: number;
      try {
        const result = await this.#deadlines.guard(
          this.#pool.query({
            name: this.#names.prune,
            text: `DELETE FROM ${this.#table} WHERE key IN (
             SELECT key FROM ${this.#table}
             WHERE done_at < clock_timestamp() - $1::bigint * interval '1 millisecond'
             LIMIT $2 FOR UPDATE SKIP LOCKED)`,
            values: [olderThanMs, PRUNE_BATCH],
          }),
        );
        deleted = result.rowCount ?? 0;
      } catch (error) {
        throw storeError('PostgresLedger', 'prune', error);
      }
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  }
}

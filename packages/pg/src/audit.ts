import { randomUUID } from 'node:crypto';
import { Deadlines, type DecisionEvent, optionError, storeError } from '@hookgate/core';
import { type Row, toRow } from './audit-row.js';
import {
  checkClient,
  lockTimeout,
  type PgQueryable,
  positiveMs,
  statementNames,
  tableName,
} from './client.js';

/** Options of {@link PostgresAuditLog}. */
export interface PostgresAuditLogOptions {
  /**
   * The table of decisions: a lower-case name, optionally schema-qualified. `setup()` creates it.
   * @default 'hookgate_decisions'
   */
  table?: string;
  /**
   * How many decisions one `INSERT` writes at most. A full batch is written at once; a partial
   * one waits for the next tick of `flushIntervalMs`.
   * @default 100
   */
  batchSize?: number;
  /**
   * How often, in ms, the decisions queued are written whatever their number, and a batch that
   * failed is tried again; at most 2,147,483,647 (a timer takes no more). The timer does not
   * keep the process alive.
   * @default 1000
   */
  flushIntervalMs?: number;
  /**
   * How many decisions wait in memory at most (the batch being written aside). When the queue
   * is full, the oldest decision is dropped to make room, and counted (`stats().dropped`).
   * @default 10000
   */
  maxQueue?: number;
  /**
   * The deadline of one batch's `INSERT`, in ms. A batch without an answer by then is kept and
   * tried again; if the late `INSERT` lands after all, the retry adds nothing (each row carries
   * `writer` and `seq`, unique together).
   * @default 2000
   */
  timeoutMs?: number;
  /**
   * Called with the error of every batch that failed, and of every tick that found a batch's
   * timed-out `INSERT` still unanswered (a `StoreUnavailableError`), from the background: to
   * log it. Whatever it does or throws, the log goes on.
   */
  onError?: (error: Error) => void;
}

/** The decision log's counters: its metric. */
export interface AuditLogStats {
  /** Decisions written to the table. */
  written: number;
  /**
   * Decisions given up: dropped from a full queue (the oldest go first), recorded after
   * `close()`, or in a batch the database refused as invalid data (SQLSTATE class 22 or 23).
   * Each leaves a gap in its writer's `seq`.
   */
  dropped: number;
  /** Batches whose `INSERT` failed or timed out (a batch kept for a retry counts each time). */
  failedBatches: number;
  /** Decisions in memory, not yet written: the queue and the batch being written. */
  queued: number;
}

/** Somebody waiting for every decision up to `upTo` to be written (`flush()`). */
interface Waiter {
  upTo: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

const OWNER = 'PostgresAuditLog';

/**
 * An append-only log of the gate's decisions in a PostgreSQL table: give `log.record` to the
 * gate as `onDecision`. Recording only queues the decision (no I/O, no promise), so the log
 * never slows or breaks the gate; the queue is written in batches, one multi-row `INSERT` each,
 * when `batchSize` decisions wait or every `flushIntervalMs`. It is bounded by `maxQueue`: while
 * PostgreSQL is down, a failed batch goes back to the front of the queue and is tried again, the
 * oldest decisions past `maxQueue` (the failed batch's first) are dropped and counted, and
 * writing resumes when the server is back. `close()` writes what is left.
 *
 * Rows are only ever inserted, so the application's role needs `INSERT` and `SELECT`, and no
 * `UPDATE`, `DELETE` or `TRUNCATE`: the adapter's docs show the grants that make the table
 * write-once for it.
 *
 * @example
 * ```ts
 * const log = new PostgresAuditLog(pool);
 * await log.setup();
 * const gate = createGate({ store, provider: providers.stripe, onDecision: log.record });
 * // at shutdown, once the gate has stopped taking deliveries:
 * await log.close();
 * ```
 */
export class PostgresAuditLog {
  /**
   * This log's id, written in the `writer` column of its rows (a random UUID per instance). With
   * `seq`, the count of decisions it recorded, it makes every row unique, and shows gaps.
   */
  readonly writer: string = randomUUID();

  readonly #client: PgQueryable;
  readonly #table: string;
  readonly #index: string;
  readonly #lockKey: string;
  readonly #insertName: string;
  readonly #batchSize: number;
  readonly #maxQueue: number;
  readonly #deadlines: Deadlines;
  readonly #timeoutMs: number;
  readonly #onError: ((error: Error) => void) | undefined;
  readonly #timer: ReturnType<typeof setInterval>;

  /** Decisions waiting, oldest first, from `#head` on. */
  #queue: Row[] = [];
  #head = 0;
  /** The batch being written. */
  #inFlight: Row[] = [];
  /** The `seq` of the last decision recorded. */
  #seq = 0;
  /** Decisions up to this `seq` are written even in a partial batch (a tick or a flush asked). */
  #drainTo = 0;
  #draining = false;
  /** The last batch failed: wait for the next tick before trying again. */
  #failing = false;
  /**
   * The `INSERT` of a batch that failed by its deadline and has not answered yet (it may still
   * be running, or waiting for a connection of the pool): the next batch waits for it, so that
   * a stalled table holds one connection, not one more per retry.
   */
  #late: Promise<void> | undefined;
  #closed = false;
  #waiters: Waiter[] = [];
  #written = 0;
  #dropped = 0;
  #failedBatches = 0;

  /**
   * @param client - a `pg` `Pool` (or `Client`); you keep it, and end it yourself (after
   * `close()`)
   * @throws HookgateError `INVALID_OPTIONS` for a client without `query`, a bad table name, or a
   * size or duration that is not a positive integer
   */
  constructor(client: PgQueryable, options: PostgresAuditLogOptions = {}) {
    const {
      table = 'hookgate_decisions',
      batchSize = 100,
      flushIntervalMs = 1_000,
      maxQueue = 10_000,
      timeoutMs = 2_000,
      onError,
    } = options;
    checkClient(OWNER, client, false);
    const { quoted, bare } = tableName(OWNER, table);
    this.#batchSize = positiveCount('batchSize', batchSize);
    this.#maxQueue = positiveCount('maxQueue', maxQueue);
    this.#timeoutMs = positiveMs(OWNER, 'timeoutMs', timeoutMs);
    this.#deadlines = new Deadlines(this.#timeoutMs);
    if (positiveMs(OWNER, 'flushIntervalMs', flushIntervalMs) > 2_147_483_647) {
      // A timer takes no more: past it, Node.js fires it every millisecond.
      throw optionError(OWNER, 'flushIntervalMs', 'must be at most 2,147,483,647 ms');
    }
    if (onError !== undefined && typeof onError !== 'function') {
      throw optionError(OWNER, 'onError', 'must be a function');
    }
    this.#client = client;
    this.#table = quoted;
    this.#index = `"${bare}_key"`;
    this.#lockKey = `hookgate.setup:${table}`;
    this.#insertName = statementNames(quoted, ['insert']).insert;
    this.#onError = onError;
    this.#timer = setInterval(this.#tick, flushIntervalMs);
    this.#timer.unref?.();
  }

  /**
   * Create the table and its index if they are missing; safe on every start, and concurrently
   * (an advisory lock serialises them). Run it with a role that may create tables; the
   * application's role only needs `INSERT` and `SELECT` (see the adapter's docs).
   */
  async setup(): Promise<void> {
    try {
      const created = this.#client.query(`
        SET LOCAL lock_timeout = ${lockTimeout(this.#timeoutMs)};
        SELECT pg_advisory_xact_lock(hashtext('${this.#lockKey}'));
        CREATE TABLE IF NOT EXISTS ${this.#table} (
          id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          writer       uuid        NOT NULL,
          seq          bigint      NOT NULL,
          at           timestamptz NOT NULL,
          decision     text        NOT NULL,
          namespace    text        NOT NULL,
          provider     text,
          key          text,
          source       text,
          subject      text,
          occurred_at  timestamptz,
          reason       text,
          error        text,
          duration_ms  bigint,
          fingerprints jsonb,
          UNIQUE (writer, seq)
        );
        CREATE INDEX IF NOT EXISTS ${this.#index} ON ${this.#table} (key, id);`);
      await this.#deadlines.guard(created);
    } catch (error) {
      throw storeError(OWNER, 'setup', error);
    }
  }

  /**
   * Queue one decision: `createGate({ onDecision: log.record, … })` (it is bound to the log).
   * It does no I/O and never throws: it converts the event to a row (an `error` becomes its
   * name and message, never its stack) and returns; a full queue drops its oldest decision.
   */
  readonly record = (event: DecisionEvent): void => {
    const seq = ++this.#seq;
    if (this.#closed) {
      this.#dropped++;
      return;
    }
    let row: Row;
    try {
      row = toRow(seq, event);
    } catch {
      this.#dropped++; // an event no row can hold (a getter that throws, say)
      return;
    }
    if (this.#queue.length - this.#head >= this.#maxQueue) this.#dropOldest(1);
    this.#queue.push(row);
    if (!this.#failing && this.#queue.length - this.#head >= this.#batchSize) this.#drain();
  };

  /**
   * Write every decision recorded before the call.
   * @returns once each was written or dropped (a full queue drops its oldest)
   * @throws StoreUnavailableError when a batch fails; its decisions stay queued for the next try
   */
  flush(): Promise<void> {
    const upTo = this.#seq;
    if (this.#oldestUnwritten() > upTo) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ upTo, resolve, reject });
    });
    this.#drainTo = Math.max(this.#drainTo, upTo);
    this.#drain();
    return done;
  }

  /**
   * Stop the timer and write what is queued. Decisions recorded afterwards are dropped, so
   * close the log once the gate takes no more deliveries. It never ends the client: that is
   * yours.
   * @throws StoreUnavailableError when the last writes fail; the decisions stay queued (see
   * `stats().queued`), and `flush()` tries again
   */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#timer);
    }
    return this.flush();
  }

  /** The log's counters, the decision-log metric: export them to your metrics system. */
  stats(): AuditLogStats {
    return {
      written: this.#written,
      dropped: this.#dropped,
      failedBatches: this.#failedBatches,
      queued: this.#queue.length - this.#head + this.#inFlight.length,
    };
  }

  /** Every tick writes all that waits, and retries a batch that failed. */
  readonly #tick = (): void => {
    this.#drainTo = this.#seq;
    this.#failing = false;
    this.#drain();
  };

  /** Write batches, one at a time, while a full one waits or decisions up to `#drainTo` do. */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    // Not in the caller's stack: `record()` only queues, whatever the batch costs to build.
    queueMicrotask(() => void this.#writeBatches());
  }

  async #writeBatches(): Promise<void> {
    let failure: Error | undefined;
    try {
      for (;;) {
        const waiting = this.#queue.length - this.#head;
        if (waiting === 0) break;
        if (waiting < this.#batchSize && this.#queue[this.#head]!.seq > this.#drainTo) break;
        if (this.#late !== undefined) {
          try {
            await this.#deadlines.guard(this.#late);
          } catch (error) {
            failure = storeError(OWNER, 'insert', error);
            this.#report(failure);
            this.#failing = true;
            break;
          }
        }
        const batch = this.#take(Math.min(this.#batchSize, waiting));
        this.#inFlight = batch;
        let query: Promise<unknown> | undefined;
        try {
          query = this.#client.query(this.#insert(batch));
          await this.#deadlines.guard(query);
          this.#written += batch.length;
          this.#failing = false;
        } catch (error) {
          this.#failedBatches++;
          if (query !== undefined) this.#awaitLate(query);
          failure = storeError(OWNER, 'insert', error);
          this.#report(failure);
          if (isDataError(error)) {
            this.#dropped += batch.length; // no retry would take it
          } else {
            this.#putBack(batch);
            this.#failing = true;
            break;
          }
        } finally {
          this.#inFlight = [];
        }
        this.#settleWaiters(undefined);
      }
    } finally {
      this.#draining = false;
      this.#settleWaiters(this.#failing ? failure : undefined);
    }
  }

  /** Keep `query`, which failed, until it has answered (a timed-out one may still be running). */
  #awaitLate(query: Promise<unknown>): void {
    const late = query.then(
      () => {},
      () => {},
    );
    this.#late = late;
    void late.then(() => {
      if (this.#late === late) this.#late = undefined;
    });
  }

  /** The `seq` of the oldest decision not written yet (in flight or queued), or `Infinity`. */
  #oldestUnwritten(): number {
    return this.#inFlight[0]?.seq ?? this.#queue[this.#head]?.seq ?? Number.POSITIVE_INFINITY;
  }

  /** Resolve the flushes whose decisions are all written; with `failure`, reject the others. */
  #settleWaiters(failure: Error | undefined): void {
    if (this.#waiters.length === 0) return;
    const oldest = this.#oldestUnwritten();
    const waiting: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (waiter.upTo < oldest) waiter.resolve();
      else if (failure !== undefined) waiter.reject(failure);
      else waiting.push(waiter);
    }
    this.#waiters = waiting;
  }

  #take(count: number): Row[] {
    const batch = this.#queue.slice(this.#head, this.#head + count);
    this.#head += count;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1_024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return batch;
  }

  /** A failed batch goes back to the front, and the queue back within `maxQueue`. */
  #putBack(batch: Row[]): void {
    this.#queue = batch.concat(this.#queue.slice(this.#head));
    this.#head = 0;
    const over = this.#queue.length - this.#maxQueue;
    if (over > 0) this.#dropOldest(over);
  }

  #dropOldest(count: number): void {
    this.#head += count;
    this.#dropped += count;
    if (this.#head >= 1_024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #report(error: Error): void {
    try {
      this.#onError?.(error);
    } catch {
      // A logging hook must not stop the log.
    }
  }

  /** One statement for the whole batch: one array per column, unnested in order. */
  #insert(batch: Row[]) {
    return {
      name: this.#insertName,
      text: `
        INSERT INTO ${this.#table} (writer, seq, at, decision, namespace, provider, key, source,
          subject, occurred_at, reason, error, duration_ms, fingerprints)
        SELECT $1::uuid, r.seq, r.at, r.decision, r.namespace, r.provider, r.key, r.source,
          r.subject, r.occurred_at, r.reason, r.error, r.duration_ms, r.fingerprints
        FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[],
          $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::text[], $12::text[],
          $13::bigint[], $14::jsonb[])
          WITH ORDINALITY AS r(seq, at, decision, namespace, provider, key, source, subject,
            occurred_at, reason, error, duration_ms, fingerprints, n)
        ORDER BY r.n
        ON CONFLICT (writer, seq) DO NOTHING`,
      values: [
        this.writer,
        batch.map((row) => row.seq),
        batch.map((row) => row.at),
        batch.map((row) => row.decision),
        batch.map((row) => row.namespace),
        batch.map((row) => row.provider),
        batch.map((row) => row.key),
        batch.map((row) => row.source),
        batch.map((row) => row.subject),
        batch.map((row) => row.occurredAt),
        batch.map((row) => row.reason),
        batch.map((row) => row.error),
        batch.map((row) => row.durationMs),
        batch.map((row) => row.fingerprints),
      ],
    };
  }
}

function positiveCount(option: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw optionError(OWNER, option, 'must be a positive integer');
  }
  return value;
}

/** SQLSTATE class 22 (data exception) or 23 (integrity constraint): a retry would fail again. */
function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23]/.test(code);
}

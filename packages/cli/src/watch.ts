import { setTimeout as sleep } from 'node:timers/promises';
import { postgresPool, UsageError } from './connect.js';
import {
  escapeControls,
  formatDecision,
  type PolledRow,
  toDecision,
  type WatchedDecision,
} from './watch-output.js';

export { DECISIONS, type WatchedDecision } from './watch-output.js';

/** What `hookgate watch` follows, and how. */
export interface WatchOptions {
  /** The `--postgres` URL. */
  readonly postgres: string;
  /** The `PostgresAuditLog` table, checked: lower-case, optionally schema-qualified. */
  readonly table: string;
  /** Only this namespace's decisions; every namespace's without it. */
  readonly namespace?: string | undefined;
  /** Only this event key's decisions (`evt:…` or `dig:…`). */
  readonly key?: string | undefined;
  /** Only these decisions. */
  readonly decisions?: readonly string[] | undefined;
  /** Print the rows whose id is above this; `undefined`: only rows written from now on. */
  readonly sinceId?: number | undefined;
  /** The pause between two polls that found nothing more to read, in ms. */
  readonly intervalMs: number;
  /** Print one JSON object per line instead of text. */
  readonly json: boolean;
  /** The deadline of the connection and of every query, in ms. */
  readonly timeoutMs: number;
}

/** How many rows one poll reads past the last id seen; a full page is followed at once. */
const PAGE = 1_000;
/** How many skipped ids are watched for a late commit at most (the newest are kept). */
const MAX_GAPS = 10_000;
/**
 * How long a skipped id is watched for. Not less, even when the snapshot says that every
 * transaction open when it was skipped has ended: a transaction may hold an id before it has
 * an xid (an insert waiting on a conflicting row: a batch retried while its first attempt is
 * still in progress), and the snapshot does not show it.
 */
const LATE_MS = 60_000;
/** How long the watch waits for a poll in progress once it is told to stop. */
const STOP_MS = 500;

/**
 * An id below the last one seen that no committed row holds yet: its transaction may still
 * commit (identity values are taken in order, but committed in any order), or it never will
 * (rolled back, or an `ON CONFLICT DO NOTHING` that inserted nothing).
 */
interface Gap {
  /** When the gap was first seen (`performance.now()`). */
  seenAt: number;
  /**
   * The `xmax` of the first poll's snapshot after the gap was seen: every transaction that had
   * written when the gap was seen has an xid below this. Once the snapshot `xmin` reaches it,
   * all of them have ended; one that held the id before writing anything may still fill it.
   */
  xmax?: bigint;
}

/**
 * Follow the decision log a `PostgresAuditLog` writes, printing each new decision on stdout as
 * it commits, until SIGINT or SIGTERM (or a closed stdout). A poll that fails for a reason that
 * may pass (a lost connection, a timeout) is reported on stderr and tried again.
 * @throws UsageError for a bad URL; an Error when the server cannot be reached, the table is
 * missing or not a decision log, or the role may not read it
 */
export async function watch(options: WatchOptions): Promise<void> {
  const postgres = await postgresPool(options.postgres, options.timeoutMs);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  const onStdoutError = () => stop.abort(); // `hookgate watch | head`: the reader is gone
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.stdout.on('error', onStdoutError);
  try {
    // A stop while connecting ends the watch at once, not when `--timeout` gives up.
    const checking = postgres.check();
    const stopped = new Promise<void>((resolve) => {
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await Promise.race([checking, stopped]);
    if (stop.signal.aborted) {
      checking.catch(() => {});
      return;
    }
    const watcher = new Watcher(postgres.pool, options, stop.signal);
    await watcher.run();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdout.off('error', onStdoutError);
    await postgres.close();
  }
}

class Watcher {
  readonly #pool: Queryable;
  readonly #options: WatchOptions;
  readonly #signal: AbortSignal;
  readonly #quoted: string;
  readonly #key: string | null;
  /** The highest id seen. */
  #last = 0;
  /** The highest id the log has held since the watch began, and its highest at the last poll. */
  #newest = 0;
  #previous = 0;
  /** Ids below `#last` not seen yet, in ascending order of when they were found. */
  readonly #gaps = new Map<number, Gap>();
  /** The error of the polls failing now, so that a run of failures is reported once. */
  #failing: string | undefined;

  constructor(pool: Queryable, options: WatchOptions, signal: AbortSignal) {
    this.#pool = pool;
    this.#options = options;
    this.#signal = signal;
    this.#quoted = options.table
      .split('.')
      .map((part) => `"${part}"`)
      .join('.');
    this.#key = options.key ?? null;
  }

  async run(): Promise<void> {
    const { sinceId, table } = this.#options;
    // Also a check that the table is there, before saying that it is watched.
    const end = await this.#end();
    this.#last = sinceId ?? end;
    this.#newest = this.#previous = end;
    // From now on: the rows below the newest whose transactions are still open count too.
    if (sinceId === undefined && !this.#signal.aborted) await this.#seedGaps(end);
    if (this.#signal.aborted) return;
    const from =
      sinceId === undefined
        ? 'new decisions'
        : sinceId === 0
          ? 'every decision'
          : `decisions after id ${sinceId}`;
    process.stderr.write(`hookgate: watching ${table} for ${from} (Ctrl-C stops)\n`);
    while (!this.#signal.aborted) {
      let full = false;
      try {
        full = await this.#poll();
        if (this.#failing !== undefined) {
          process.stderr.write('hookgate: polling again\n');
          this.#failing = undefined;
        }
      } catch (error) {
        if (this.#signal.aborted) return;
        if (!transient(error)) throw explain(error, table);
        const message = escapeControls(messageOf(error));
        if (this.#failing !== message) {
          process.stderr.write(
            `hookgate: a poll failed: ${message}; trying again every ${this.#options.intervalMs} ms\n`,
          );
          this.#failing = message;
        }
      }
      if (!full)
        await sleep(this.#options.intervalMs, undefined, { signal: this.#signal }).catch(() => {});
    }
  }

  /** The id of the newest row, where a watch without `--since-id` starts. */
  async #end(): Promise<number> {
    try {
      const { rows } = await this.#query<{ id: string }>(
        `SELECT coalesce(max(id), 0)::text AS id FROM ${this.#quoted}`,
        [],
      );
      return idOf(rows[0]?.id ?? '0');
    } catch (error) {
      if (this.#signal.aborted) return 0;
      throw explain(error, this.#options.table);
    }
  }

  /**
   * Watch, as skipped, the ids among the newest `MAX_GAPS` up to `end` that no committed row
   * holds: a transaction open as the watch starts may still commit one of them.
   */
  async #seedGaps(end: number): Promise<void> {
    const from = Math.max(0, end - MAX_GAPS);
    let rows: { id: string }[];
    try {
      ({ rows } = await this.#query<{ id: string }>(
        `SELECT id::text AS id FROM ${this.#quoted} WHERE id > $1::bigint`,
        [String(from)],
      ));
    } catch (error) {
      if (this.#signal.aborted) return;
      throw explain(error, this.#options.table);
    }
    const present = new Set(rows.map((row) => idOf(row.id)));
    const seenAt = performance.now();
    for (let id = from + 1; id < end; id++) {
      if (!present.has(id)) this.#gaps.set(id, { seenAt });
    }
  }

  /**
   * Read the rows after the last id seen and the gaps still open, print those that match, and
   * close the gaps that can no longer be filled.
   * @returns whether a full page was read (there may be more right away)
   */
  async #poll(): Promise<boolean> {
    const { namespace, decisions } = this.#options;
    const asked = [...this.#gaps.keys()];
    const { rows } = await this.#query<PolledRow>(this.#sql(), [
      String(this.#last),
      asked.map(String),
      namespace ?? null,
      this.#key,
      decisions ?? null,
    ]);
    if (this.#signal.aborted) return false;
    const first = rows[0];
    if (first === undefined) return false; // the snapshot row is always there
    // Ids are reused when the log's highest id grows again without passing the highest it held
    // (deleted rows alone only lower it: the next id is still above every one seen).
    const newest = idOf(first.newest);
    if (newest > this.#previous && newest <= this.#newest) {
      throw new LogError(
        `the decision log reuses ids (its highest went from ${this.#previous} to ${newest}, below the ${this.#newest} it held: TRUNCATE ... RESTART IDENTITY, or its identity reset): its rows after id ${this.#last} may be old or new, so the watch stops; start it again`,
      );
    }
    this.#previous = newest;
    this.#newest = Math.max(this.#newest, newest);
    let read = 0;
    for (const row of rows) {
      if (row.id === null) continue;
      const id = idOf(row.id);
      if (id > this.#last) {
        read++;
        this.#openGaps(id);
        this.#last = id;
      } else {
        this.#gaps.delete(id); // a late commit
      }
      if (row.decision !== null) this.#print(toDecision(id, row));
    }
    this.#closeGaps(asked, BigInt(first.xmin), BigInt(first.xmax));
    return read >= PAGE;
  }

  /** Remember the ids between the last one seen and `id`: a transaction may still commit them. */
  #openGaps(id: number): void {
    const seenAt = performance.now();
    for (let gap = Math.max(this.#last + 1, id - MAX_GAPS); gap < id; gap++) {
      this.#gaps.set(gap, { seenAt });
    }
    let over = this.#gaps.size - MAX_GAPS;
    if (over <= 0) return;
    const dropped: number[] = [];
    for (const gap of this.#gaps.keys()) {
      if (over-- <= 0) break;
      this.#gaps.delete(gap);
      dropped.push(gap);
    }
    this.#warnLate(dropped, `more than ${MAX_GAPS} ids were waiting`);
  }

  /**
   * Close the gaps this poll asked about that are `LATE_MS` old, and say so for those a
   * transaction open when the gap was seen may still fill (the poll's snapshot has one open).
   */
  #closeGaps(asked: readonly number[], xmin: bigint, xmax: bigint): void {
    const now = performance.now();
    const late: number[] = [];
    for (const id of asked) {
      const gap = this.#gaps.get(id);
      if (gap === undefined) continue; // filled by this poll
      // The bound comes from a poll after the one that found the gap (`asked` holds none of
      // this poll's): when the gap was found, its writer might have taken the id and not yet
      // its xid.
      gap.xmax ??= xmax;
      if (now - gap.seenAt < LATE_MS) continue;
      this.#gaps.delete(id);
      if (xmin < gap.xmax) late.push(id);
    }
    this.#warnLate(late, `transactions open for over ${LATE_MS / 1000} s may still write them`);
  }

  #warnLate(ids: readonly number[], why: string): void {
    if (ids.length === 0) return;
    const which =
      ids.length === 1 ? `id ${ids[0]}` : `${ids.length} ids from ${ids[0]} to ${ids.at(-1)}`;
    process.stderr.write(
      `hookgate: no longer waiting for decision ${which}: ${why}; a row that commits there later is not printed\n`,
    );
  }

  #print(decision: WatchedDecision): void {
    process.stdout.write(`${formatDecision(decision, this.#options.json)}\n`);
  }

  /**
   * One statement, so that the snapshot bounds describe exactly what the rows show: the gaps
   * still open, then up to a page of rows after the last id, each with its columns when it
   * passes the filters (and `NULL`s when not: its id still counts).
   */
  #sql(): string {
    const table = this.#quoted;
    return `
      SELECT pg_snapshot_xmin(s.snapshot)::text AS xmin, pg_snapshot_xmax(s.snapshot)::text AS xmax,
        (SELECT coalesce(max(id), 0) FROM ${table})::text AS newest, r.id::text AS id, m.*
      FROM pg_current_snapshot() AS s(snapshot)
      LEFT JOIN (
        (SELECT * FROM ${table} WHERE id = ANY($2::bigint[]))
        UNION ALL
        (SELECT * FROM ${table} WHERE id > $1::bigint ORDER BY id LIMIT ${PAGE})
      ) AS r ON true
      LEFT JOIN LATERAL (
        SELECT r.decision, r.at, r.namespace, r.provider, r.key, r.source, r.subject,
          r.occurred_at, r.reason, r.error, r.duration_ms::text AS duration_ms, r.fingerprints,
          r.writer::text AS writer, r.seq::text AS seq
        WHERE ($3::text IS NULL OR r.namespace = $3)
          AND ($4::text IS NULL OR r.key = $4)
          AND ($5::text[] IS NULL OR r.decision = ANY($5))
      ) AS m ON true
      ORDER BY r.id`;
  }

  /**
   * A query that a stop cancels on the server (one waiting for a lock would otherwise go on
   * until `--timeout`) and waits for no longer than `STOP_MS`, also while it connects; it then
   * resolves no rows.
   */
  async #query<T>(text: string, values: unknown[]): Promise<{ rows: T[] }> {
    const connecting = this.#pool.connect();
    const client = await this.#orStop(connecting);
    if (client === undefined) {
      connecting.then(
        (late) => late.release(true),
        () => {},
      );
      return { rows: [] };
    }
    const query = client.query(text, values) as Promise<{ rows: T[] }>;
    let settled = false;
    let failed = false;
    query.then(
      () => (settled = true),
      () => (settled = failed = true),
    );
    const cancel = () => {
      const pid = (client as { processID?: unknown }).processID;
      if (!settled && typeof pid === 'number') {
        this.#pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => {});
      }
    };
    if (this.#signal.aborted) cancel();
    else this.#signal.addEventListener('abort', cancel, { once: true });
    try {
      return (await this.#orStop(query)) ?? { rows: [] };
    } finally {
      this.#signal.removeEventListener('abort', cancel);
      // A connection still busy, or whose query failed (it may still run), is closed.
      client.release(settled && !failed ? undefined : true);
    }
  }

  /** `promise`, or `undefined` once the watch was told to stop `STOP_MS` ago. */
  async #orStop<V>(promise: Promise<V>): Promise<V | undefined> {
    promise.catch(() => {}); // when the stop wins the race, nobody else awaits it
    let onAbort = () => {};
    const stopped = new Promise<undefined>((resolve) => {
      onAbort = () => setTimeout(resolve, STOP_MS, undefined).unref();
    });
    if (this.#signal.aborted) onAbort();
    else this.#signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.race([promise, stopped]);
    } finally {
      this.#signal.removeEventListener('abort', onAbort);
    }
  }
}

/** What the watch uses of a `pg` pool. */
interface Queryable {
  query(text: string, values: unknown[]): Promise<unknown>;
  connect(): Promise<{
    query(text: string, values: unknown[]): Promise<unknown>;
    release(destroy?: boolean): void;
  }>;
}

/**
 * A log the watch cannot follow, which trying again will not change: an id past 2^53 - 1 (a
 * number no longer counts them one by one), or ids reused.
 */
class LogError extends Error {}

function idOf(text: string): number {
  const id = Number(text);
  if (!Number.isSafeInteger(id)) {
    throw new LogError(
      `the decision log has an id past 2^53 - 1 (${text}), which watch cannot follow`,
    );
  }
  return id;
}

/** Whether a failed poll may pass when tried again: anything but a mistake in what is asked. */
function transient(error: unknown): boolean {
  if (error instanceof LogError) return false;
  const code = (error as { code?: unknown } | null)?.code;
  // Class 42: syntax error or access rule violation (no table, no column, no privilege).
  return !(typeof code === 'string' && code.startsWith('42'));
}

/** A failed query as the watch reports it: a missing table says how to create it. */
function explain(error: unknown, table: string): Error {
  if (error instanceof LogError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '42P01') {
    return new Error(
      `the decision log table ${table} does not exist: create it with PostgresAuditLog.setup() (@hookgate/pg), or name yours with --table`,
    );
  }
  if (code === '42883') {
    return new Error(`watch needs PostgreSQL 13 or newer (${messageOf(error)})`);
  }
  if (code === '42703') {
    return new Error(
      `${table} is not a decision log as PostgresAuditLog.setup() creates it (${messageOf(error)})`,
    );
  }
  return new Error(`cannot read the decision log ${table}: ${messageOf(error)}`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

/** Check a `--table` as `PostgresAuditLog` does: lower-case, optionally schema-qualified. */
export function checkTable(table: string): string {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => /^[a-z_][a-z0-9_]{0,62}$/.test(part))) {
    throw new UsageError(
      `--table must be a lower-case identifier, optionally schema-qualified (got '${table}')`,
    );
  }
  return table;
}

import { connect } from 'node:net';
import {
  type Deadlines,
  optionError,
  type StoreUnavailableError,
  storeError,
} from '@hookgate/core';

/** What a query resolves to, as node-postgres (`pg` 8) gives it. */
export interface PgResult {
  /** The rows, as objects keyed by column name. */
  rows: Record<string, unknown>[];
  /** How many rows the statement touched (`null` for some utility statements). */
  rowCount: number | null;
}

/** A statement as node-postgres takes it: with a `name`, it is prepared once per connection. */
export interface PgQueryConfig {
  /** The statement, with `$1`, `$2`, … for `values`. */
  text: string;
  /** The values bound to `$1`, `$2`, …. */
  values?: unknown[];
  /** A prepared statement's name: parsed and planned once per connection, then reused. */
  name?: string;
}

/**
 * Anything that runs statements the way node-postgres does: a `pg` `Pool` or `Client`, or the
 * pool behind Drizzle's or Kysely's node-postgres driver. The store sends its own statements as
 * named prepared statements (a config object), which plans each once per connection (a third
 * of the time of a new delivery, measured). The package never imports `pg`.
 */
export interface PgQueryable {
  /** Run `text` with `$1`, `$2`, … bound to `values`. */
  query(text: string, values?: unknown[]): Promise<PgResult>;
  /** Run a statement given as a config object (a named one is prepared once per connection). */
  query(config: PgQueryConfig): Promise<PgResult>;
}

/**
 * The names of a store's prepared statements: `hg_<hash of its table>_<operation>`, so that two
 * stores over two tables never share a name on a connection (names must be unique there). The
 * hash has 64 bits: 32 let two table names collide (`"claims_512789"` and `"claims_749192"`).
 */
export function statementNames<const K extends string>(
  table: string,
  operations: readonly K[],
): Record<K, string> {
  let hash = 0xcbf29ce484222325n; // FNV-1a, 64 bits (run once per store)
  for (let i = 0; i < table.length; i++) {
    hash ^= BigInt(table.charCodeAt(i));
    hash = BigInt.asUintN(64, hash * 0x100000001b3n);
  }
  const prefix = `hg_${hash.toString(16).padStart(16, '0')}_`;
  return Object.fromEntries(operations.map((op) => [op, prefix + op])) as Record<K, string>;
}

/** A connection checked out of a pool, for one transaction. */
export interface PgPoolClient extends PgQueryable {
  /** Give the connection back; `true` or an error destroys it instead. */
  release(destroy?: boolean | Error): void;
  /** A `pg` client's events: its `'error'` (a terminated backend) is listened to while in use. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  /** Stop listening. */
  off?(event: 'error', listener: (error: Error) => void): unknown;
  /** A `pg` client's backend process id, for a cancel request. */
  processID?: number | null;
  /** A `pg` client's backend secret key, for a cancel request. */
  secretKey?: number | null;
  /** Where a `pg` client connects: a host, or a Unix socket's directory (`/…`). */
  host?: string;
  /** The port a `pg` client connects to. */
  port?: number | string;
}

/** A `pg` `Pool` (or anything with `query` and `connect`): what transactions need. */
export interface PgPool extends PgQueryable {
  /** Check a connection out for a transaction. */
  connect(): Promise<PgPoolClient>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/**
 * The longest table name: its index names add up to 11 characters (`_expires_at`) to it, and
 * PostgreSQL cuts names at 63, so a longer one would name an index as the table itself, and
 * `CREATE INDEX IF NOT EXISTS` would skip it.
 */
const MAX_TABLE = 52;

/**
 * A table option checked and quoted: `name` or `schema.name`, lower-case letters, digits and
 * `_` (no quoting games: the name is written into the statements).
 * @returns the quoted name, and the bare table name (for the names of its indexes).
 */
export function tableName(owner: string, table: string): { quoted: string; bare: string } {
  const parts = typeof table === 'string' ? table.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw optionError(
      owner,
      'table',
      `must be a lower-case identifier, optionally schema-qualified (got ${JSON.stringify(table)})`,
    );
  }
  if (parts.at(-1)!.length > MAX_TABLE) {
    throw optionError(
      owner,
      'table',
      `must be at most ${MAX_TABLE} characters without its schema, so that its index names fit PostgreSQL's 63 (got ${parts.at(-1)!.length})`,
    );
  }
  return { quoted: parts.map((part) => `"${part}"`).join('.'), bare: parts.at(-1)! };
}

/** Check that `client` can run queries (and, with `needsConnect`, check connections out). */
export function checkClient(owner: string, client: unknown, needsConnect: boolean): void {
  const shaped = client as Partial<PgPool> | null;
  if (typeof shaped?.query !== 'function') {
    throw optionError(
      owner,
      'client',
      'must be a node-postgres Pool or Client (with query(text, values))',
    );
  }
  // A `pg` `Client` has a `connect()` too, which connects it once: a transaction would take
  // it for a pool's and fail on every delivery. Its connection parameters tell it apart.
  if (
    needsConnect &&
    (typeof shaped.connect !== 'function' || 'connectionParameters' in (shaped as object))
  ) {
    throw optionError(
      owner,
      'pool',
      'must be a node-postgres Pool (with connect()), for transactions, not a Client',
    );
  }
}

/** Connections that already have a listener for their late `'error'` events. */
const guarded = new WeakSet<object>();

/**
 * A terminated backend can make a connection emit `'error'` more than once, and after it was
 * released (destroyed) too; a connection without a listener then takes the process down. Give
 * every connection a transaction used one listener, for good.
 */
function guardErrors(client: PgPoolClient): void {
  if (guarded.has(client) || typeof client.on !== 'function') return;
  guarded.add(client);
  client.on('error', () => {});
}

/**
 * Run `work` in one transaction on a connection checked out of `pool`: `BEGIN`, `work`,
 * `COMMIT`; `ROLLBACK` when `work` throws (its error goes on). Checking out, `BEGIN` and
 * `COMMIT` have the deadline of `deadlines`; any of them failing is a `StoreUnavailableError`.
 * A connection that failed, timed out or could not roll back is destroyed rather than returned
 * to the pool mid-transaction, as is one `work` abandons (`abandon()`, then throw) because a
 * statement of its own passed its deadline: no `ROLLBACK` is queued behind it. A backend
 * waiting on a lock does not notice that its client went away, so that statement is also
 * cancelled (see {@link cancelBackend}): the server then ends the transaction, uncommitted, and
 * the backend exits, rather than holding a connection slot and its locks until the lock it
 * waits on is released. While checked out, the connection's `'error'` events (a
 * terminated backend) are listened to, so that they fail the transaction instead of the process.
 *
 * A `COMMIT` that fails (its reply lost with the connection, or late) may have happened. Then
 * `landed`, once the connection is gone, reads whether it did: when it says so, the transaction
 * succeeded; when it says not, or cannot tell, the `COMMIT`'s error goes on.
 */
export async function inTransaction<T>(
  owner: string,
  pool: PgPool,
  deadlines: Deadlines,
  work: (client: PgPoolClient, abandon: () => void) => Promise<T>,
  landed: () => Promise<boolean>,
): Promise<T> {
  const connecting = pool.connect();
  let client: PgPoolClient;
  try {
    client = await deadlines.guard(connecting);
  } catch (error) {
    // A connection that arrives after the deadline goes straight back.
    connecting.then(
      (late) => late.release(),
      () => {},
    );
    throw storeError(owner, 'connect', error);
  }
  let broken = false;
  let abandoned = false;
  const onError = () => {
    broken = true;
  };
  const abandon = () => {
    broken = abandoned = true;
  };
  guardErrors(client);
  client.on?.('error', onError);
  let result: T;
  let unknown: StoreUnavailableError | undefined;
  try {
    try {
      await deadlines.guard(client.query('BEGIN'));
    } catch (error) {
      broken = true;
      throw storeError(owner, 'begin', error);
    }
    result = await work(client, abandon);
    try {
      await deadlines.guard(client.query('COMMIT'));
    } catch (error) {
      broken = true;
      unknown = storeError(owner, 'commit', error);
    }
  } catch (error) {
    if (!broken) {
      await deadlines.guard(client.query('ROLLBACK')).catch(() => {
        broken = true;
      });
    }
    throw error;
  } finally {
    client.off?.('error', onError);
    if (abandoned) cancelBackend(client, deadlines.timeoutMs);
    client.release(broken);
  }
  // The commit may or may not have happened: ask the database, on another connection.
  if (unknown !== undefined && !(await landed().catch(() => false))) throw unknown;
  return result;
}

/**
 * Cancel what the backend of `client` is running (a statement that waits on a lock), as libpq's
 * `PQcancel` does: a CancelRequest with the backend's process id and secret key, on a
 * connection of its own. It needs no connection of the pool (which may have none free), cannot
 * reach another backend (the key is the backend's secret; a pid may be reused), and a pooler
 * such as PgBouncer routes it to the right server. Best effort, not awaited: a connection
 * still pending after `timeoutMs` is dropped.
 */
function cancelBackend(client: PgPoolClient, timeoutMs: number): void {
  const { processID, secretKey, host = 'localhost' } = client;
  const port = Number(client.port ?? 5432);
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
  socket.setTimeout(timeoutMs, () => socket.destroy());
  socket.on('error', () => {});
  const request = Buffer.alloc(16);
  request.writeInt32BE(16, 0); // length
  request.writeInt32BE(80877102, 4); // the CancelRequest code: 1234 << 16 | 5678
  request.writeInt32BE(processID, 8);
  request.writeInt32BE(secretKey, 12);
  socket.end(request); // sent once connected; the server answers by closing
}

/** Whether `error` is a deadline that passed (as {@link Deadlines} rejects), or wraps one. */
export function pastDeadline(error: unknown): boolean {
  const timeout = (candidate: unknown) =>
    candidate instanceof DOMException && candidate.name === 'TimeoutError';
  return timeout(error) || (error instanceof Error && timeout(error.cause));
}

/** Check a duration argument: a positive integer of milliseconds. */
export function positiveMs(owner: string, option: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw optionError(owner, option, 'must be a positive integer of milliseconds');
  }
  return value;
}

/**
 * A `lock_timeout` of `ms`: PostgreSQL takes up to 2,147,483,647 ms (about 25 days), and a
 * longer `timeoutMs` is as good as none there.
 */
export function lockTimeout(ms: number): number {
  return Math.min(ms, 2_147_483_647);
}

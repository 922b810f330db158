import { createGate, type Gate, parseRecord, storeError } from '@hookgate/core';
import type { Redis } from 'ioredis';
import type pg from 'pg';

// The drivers are imported when a command connects, and only the one it needs: loading ioredis
// and pg took about 0.3 s each at every start, `--help` included.

/** A mistake in the command line: exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The store could not be reached in time: exit code 1. */
export class ConnectError extends Error {
  override readonly name = 'ConnectError';
}

/** Where the records are, as the command line says. */
export interface Target {
  readonly redis?: string | undefined;
  readonly postgres?: string | undefined;
  readonly namespace: string;
  readonly table?: string | undefined;
  readonly timeoutMs: number;
}

/** Live records of a namespace, by state. */
export interface Stats {
  namespace: string;
  processing: number;
  done: number;
  watermark: number;
  /** Values under the namespace that hookgate did not write (Redis only). */
  other: number;
  total: number;
  /** Redis: the scan stopped at `--limit` keys, so the counts are a lower bound. */
  truncated: boolean;
}

/** A gate over the store the command line names, and what else a command needs of it. */
export interface Connection {
  readonly gate: Gate;
  stats(limit: number): Promise<Stats>;
  close(): Promise<void>;
}

/** How long `close()` may take before the process is left to exit anyway. */
const CLOSE_MS = 500;

/**
 * Connect to the store of `target` (bounded by its `timeoutMs`) and build a gate over it.
 * @throws UsageError for a bad URL, HookgateError `INVALID_OPTIONS` for a bad namespace or
 * table, ConnectError when the store cannot be reached in time
 */
export async function connect(target: Target): Promise<Connection> {
  if (target.redis !== undefined) {
    if (target.table !== undefined) throw new UsageError('--table goes with --postgres only');
    return connectRedis(target.redis, target);
  }
  return connectPostgres(target.postgres!, target);
}

function parseUrl(flag: string, value: string, protocols: readonly string[]): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {}
  if (url === undefined || !protocols.includes(url.protocol)) {
    const schemes = protocols.map((protocol) => `${protocol}//`).join(' or ');
    throw new UsageError(`--${flag} must be a ${schemes} URL`);
  }
  return url;
}

async function connectRedis(value: string, target: Target): Promise<Connection> {
  const url = parseUrl('redis', value, ['redis:', 'rediss:']);
  const { namespace, timeoutMs } = target;
  const [{ Redis }, { IoRedisStore }] = await Promise.all([
    import('ioredis'),
    import('@hookgate/ioredis'),
  ]);
  const client = new Redis(value, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // One attempt: a command-line tool reports an unreachable server instead of retrying.
    retryStrategy: () => null,
    connectionName: 'hookgate-cli',
    // disconnect() ends the socket, and destroys it if the server has not closed it by then.
    disconnectTimeout: CLOSE_MS,
  });
  // Errors reach us through the promises; without a listener ioredis would print them too.
  // The last one says why a connection failed better than ioredis' "Connection is closed.".
  let lastError: unknown;
  client.on('error', (error) => {
    lastError = error;
  });
  const close = async () => client.disconnect();
  try {
    const gate = createGate({ store: new IoRedisStore(client, { timeoutMs }), namespace });
    const where = `Redis at ${url.hostname}:${url.port || '6379'}`;
    const connected = client.connect().catch((error: unknown) => {
      throw lastError ?? error;
    });
    await withDeadline(connected, timeoutMs, where);
    return { gate, stats: (limit) => redisStats(client, namespace, limit), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function redisStats(client: Redis, namespace: string, limit: number): Promise<Stats> {
  const stats: Stats = {
    namespace,
    processing: 0,
    done: 0,
    watermark: 0,
    other: 0,
    total: 0,
    truncated: false,
  };
  // SCAN may return a key more than once; each is read and counted once.
  const seen = new Set<string>();
  let cursor = '0';
  try {
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${namespace}:*`, 'COUNT', 1000);
      cursor = next;
      const fresh: string[] = [];
      for (const key of keys) {
        if (seen.has(key)) continue;
        if (seen.size >= limit) break;
        seen.add(key);
        fresh.push(key);
      }
      if (seen.size >= limit && (cursor !== '0' || fresh.length < keys.length)) {
        stats.truncated = true;
      }
      if (fresh.length === 0) continue;
      const replies = (await client.pipeline(fresh.map((key) => ['get', key])).exec()) ?? [];
      for (const [error, value] of replies) {
        if (error) {
          // A hash, list or set under the namespace: not hookgate's.
          if (!String(error.message).startsWith('WRONGTYPE')) throw error;
          stats.other++;
        } else if (value !== null) {
          // null: the key expired between SCAN and GET.
          stats[parseRecord(String(value))?.kind ?? 'other']++;
        }
      }
    } while (cursor !== '0' && !stats.truncated);
  } catch (error) {
    throw storeError('hookgate', 'stats', error);
  }
  stats.total = stats.processing + stats.done + stats.watermark + stats.other;
  return stats;
}

async function connectPostgres(value: string, target: Target): Promise<Connection> {
  const { namespace, timeoutMs, table = 'hookgate_claims' } = target;
  const { PostgresStore } = await import('@hookgate/pg');
  const postgres = await postgresPool(value, timeoutMs);
  try {
    const gate = createGate({
      store: new PostgresStore(postgres.pool, { table, timeoutMs }),
      namespace,
    });
    await postgres.check();
    return {
      gate,
      stats: () => postgresStats(postgres.pool, table, namespace),
      close: postgres.close,
    };
  } catch (error) {
    await postgres.close();
    throw error;
  }
}

/** A small `pg` pool for one command, made by {@link postgresPool}. */
export interface PostgresPool {
  readonly pool: pg.Pool;
  /** Check out one connection and give it back (bounded by the pool's `timeoutMs`). */
  check(): Promise<void>;
  /** End the pool, waiting for it no longer than half a second. */
  close(): Promise<void>;
}

/**
 * A pool of at most two connections to the database of a `--postgres` URL, with `timeoutMs`
 * as the deadline of connecting and of every query. It connects on first use: `check()`.
 * @throws UsageError for a URL that is not `postgres://` or `postgresql://`
 */
export async function postgresPool(value: string, timeoutMs: number): Promise<PostgresPool> {
  const url = parseUrl('postgres', value, ['postgres:', 'postgresql:']);
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: value,
    max: 2,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    application_name: 'hookgate-cli',
  });
  // A connection the server ends emits 'error' outside any query; the query reports it.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const database = url.pathname.slice(1);
  const where = `PostgreSQL at ${url.hostname}:${url.port || '5432'}${database ? `/${database}` : ''}`;
  return {
    pool,
    async check() {
      const connection = await withDeadline(pool.connect(), timeoutMs, where);
      connection.release();
    },
    async close() {
      await withDeadline(pool.end(), CLOSE_MS, 'closing').catch(() => {});
    },
  };
}

async function postgresStats(pool: pg.Pool, table: string, namespace: string): Promise<Stats> {
  // `table` was checked by PostgresStore (lower-case identifiers, optionally schema-qualified).
  const quoted = table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
  // `_` is a LIKE wildcard and may be in a namespace.
  const prefix = `${namespace.replace(/[\\%_]/g, '\\$&')}:%`;
  let rows: { kind: string; count: string }[];
  try {
    ({ rows } = await pool.query(
      `SELECT kind, count(*) AS count FROM ${quoted}
       WHERE key LIKE $1 ESCAPE '\\' AND expires_at > clock_timestamp()
       GROUP BY kind`,
      [prefix],
    ));
  } catch (error) {
    throw storeError('hookgate', 'stats', error);
  }
  const stats: Stats = {
    namespace,
    processing: 0,
    done: 0,
    watermark: 0,
    other: 0,
    total: 0,
    truncated: false,
  };
  const kinds: Record<string, 'processing' | 'done' | 'watermark'> = {
    p: 'processing',
    d: 'done',
    w: 'watermark',
  };
  for (const { kind, count } of rows) stats[kinds[kind] ?? 'other'] += Number(count);
  stats.total = stats.processing + stats.done + stats.watermark + stats.other;
  return stats;
}

/** `promise`, or a ConnectError naming `where` when it is not settled within `ms`. */
async function withDeadline<T>(promise: Promise<T>, ms: number, where: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ConnectError(`cannot connect to ${where}: no answer within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([
      promise.catch((error: unknown) => {
        throw new ConnectError(`cannot connect to ${where}: ${describe(error)}`);
      }),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** One line about a connection error; `localhost` refusing on ::1 and 127.0.0.1 is an AggregateError without a message. */
function describe(error: unknown): string {
  if (error instanceof AggregateError && error.message === '') {
    return error.errors.map(describe).join('; ');
  }
  if (error instanceof Error) {
    return error.message || (error as { code?: string }).code || error.name;
  }
  return String(error);
}

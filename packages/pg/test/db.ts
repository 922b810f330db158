import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** The shared server the tests use (trust auth, database `test`); never stopped by them. */
export const SHARED = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };

/**
 * A pool of the shared server (or of `port`), its errors silenced (tests make them on purpose).
 * Each connection gets an `'error'` listener of its own, as the adapter's docs advise: when a
 * backend is terminated, `pg` can emit `'error'` on a pooled connection outside any query and
 * outside the pool's idle listener, which would otherwise end the process.
 */
export function pool(options: pg.PoolConfig = {}): pg.Pool {
  const made = new pg.Pool({ ...SHARED, max: 10, ...options });
  made.on('error', () => {});
  made.on('connect', (client) => client.on('error', () => {}));
  return made;
}

/** A table name no other test uses. */
export function uniqueTable(prefix = 'hookgate_test'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Drop the tables a test made. */
export async function drop(on: pg.Pool, ...tables: string[]): Promise<void> {
  for (const table of tables) await on.query(`DROP TABLE IF EXISTS "${table}"`);
}

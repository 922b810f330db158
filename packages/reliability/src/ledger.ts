/**
 * The PostgreSQL side: one table of handler runs per test file (no unique constraint, so a
 * double run shows as two rows), and the exactly-once check over it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createTableSql } from './receiver.js';

export interface Tally {
  /** Events expected. */
  events: number;
  /** Runs beyond the first, summed over every event (must be 0). */
  duplicates: number;
  /** Events that never ran (must be 0). */
  lost: number;
  /** Keys that ran more than once, with their counts. */
  doubled: Record<string, number>;
  /** Keys that never ran. */
  missing: string[];
  /** Keys that ran but were never sent. */
  unexpected: string[];
}

export class Ledger {
  readonly table: string;
  readonly #pool: pg.Pool;

  private constructor(table: string, pool: pg.Pool) {
    this.table = table;
    this.#pool = pool;
  }

  /** Create a fresh table `reliability_<label>_<random>`. */
  static async open(label: string): Promise<Ledger> {
    const table = `reliability_${label}_${randomBytes(4).toString('hex')}`;
    const pool = new pg.Pool({
      host: '127.0.0.1',
      port: 5432,
      user: 'postgres',
      database: 'test',
      max: 2,
    });
    await pool.query(createTableSql(table));
    return new Ledger(table, pool);
  }

  /** How many times each key whose key starts with `prefix` ran. */
  async runs(prefix: string): Promise<Map<string, number>> {
    const { rows } = await this.#pool.query<{ event_key: string; runs: string }>(
      `SELECT event_key, count(*) AS runs FROM ${this.table}
       WHERE starts_with(event_key, $1) GROUP BY event_key`,
      [prefix],
    );
    return new Map(rows.map((row) => [row.event_key, Number(row.runs)]));
  }

  /** Compare the runs of keys starting with `prefix` with the keys expected. */
  async tally(prefix: string, expected: readonly string[]): Promise<Tally> {
    const runs = await this.runs(prefix);
    const want = new Set(expected);
    const tally: Tally = {
      events: want.size,
      duplicates: 0,
      lost: 0,
      doubled: {},
      missing: [],
      unexpected: [],
    };
    for (const key of want) {
      const count = runs.get(key) ?? 0;
      if (count === 0) tally.missing.push(key);
      if (count > 1) {
        tally.doubled[key] = count;
        tally.duplicates += count - 1;
      }
    }
    for (const key of runs.keys()) if (!want.has(key)) tally.unexpected.push(key);
    tally.lost = tally.missing.length;
    return tally;
  }

  /** Drop the table and close the pool. */
  async close(): Promise<void> {
    try {
      await this.#pool.query(`DROP TABLE IF EXISTS ${this.table}`);
    } finally {
      await this.#pool.end();
    }
  }
}

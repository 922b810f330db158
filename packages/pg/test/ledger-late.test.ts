/**
 * A handler that outlives its claim while a redelivery takes the key, with the ledger: the late
 * transaction commits (its ledger row came first), the redelivery waits for that row and is a
 * duplicate, and the late `run` rejects with `LeaseLostError` although its effects committed
 * (docs/guarantees.md's summary, docs/concepts.md's "Lost means taken").
 */
import { createGate, LeaseLostError } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { PostgresLedger } from '../src/index.js';
import { drop, pool, uniqueTable } from './db.js';

const shared = pool({ max: 4 });
const table = uniqueTable('hookgate_ledger');
const effects = uniqueTable('hookgate_effects');
const ledger = new PostgresLedger(shared, { table });

beforeAll(async () => {
  await ledger.setup();
  await shared.query(`CREATE TABLE "${effects}" (event_key text NOT NULL)`);
});
afterAll(async () => {
  await drop(shared, table, effects);
  await shared.end();
});

it('a handler that outlives its claim commits; the redelivery that took the key is a duplicate, and the late run is a lost lease', async () => {
  // One store, as two workers behind one Redis share it; a claim that expires while the
  // first handler still runs.
  const gate = createGate({ store: new MemoryStore(), eventId: 'id', claimTtlMs: 100 });
  let runs = 0;
  let holding = false;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const handler = ledger.transaction(async (event, tx) => {
    runs++;
    await tx.query(`INSERT INTO "${effects}" VALUES ($1)`, [event.lease!.key]);
    holding = true; // its ledger row too, inserted before the handler ran
    if (runs === 1) await finished;
    return 'paid';
  });
  const late = gate.run({ payload: { id: 'evt_late' } }, handler).then(
    (outcome) => outcome,
    (error: unknown) => error,
  );
  await vi.waitFor(() => expect(holding).toBe(true));
  // The first claim expires while its handler still runs.
  await vi.waitFor(
    async () => expect((await gate.inspect({ id: 'evt_late' })).state).toBe('absent'),
    { timeout: 5_000, interval: 10 },
  );
  // The redelivery claims the free key and waits on the late transaction's ledger row.
  const redelivery = gate.run({ payload: { id: 'evt_late' } }, handler);
  await vi.waitFor(
    async () => {
      const { rows } = await shared.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%INSERT INTO "${table}"%`],
      );
      expect(rows[0].n).toBe(1);
    },
    { timeout: 5_000, interval: 10 },
  );
  finish();
  expect(await redelivery).toEqual({ status: 'duplicate', key: 'evt:evt_late' });
  expect(await late).toBeInstanceOf(LeaseLostError);
  expect(runs).toBe(1);
  const { rows } = await shared.query(
    `SELECT count(*)::int AS n FROM "${effects}" WHERE event_key = $1`,
    ['hookgate:evt:evt_late'],
  );
  expect(rows[0].n).toBe(1); // the late transaction's effect, committed
});

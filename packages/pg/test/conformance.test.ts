import { claimStoreSuite } from '@hookgate/store-conformance';
import { afterAll, beforeAll, vi } from 'vitest';
import { PostgresStore } from '../src/index.js';
import { drop, pool, uniqueTable } from './db.js';

// The suite's TTL and error tests mostly wait: let them all wait at once.
vi.setConfig({ maxConcurrency: 20 });

const table = uniqueTable();
// Several pools: the suite's "separate stores" race over separate connections.
const pools = Array.from({ length: 4 }, () => pool({ max: 4 }));
const stores = pools.map((p) => new PostgresStore(p, { table }));
// Nothing listens on this port: every operation fails at once (connection refused).
const refused = pool({ port: 1, max: 1, connectionTimeoutMillis: 1_000 });

beforeAll(() => stores[0]!.setup());
afterAll(async () => {
  await drop(pools[0]!, table);
  await Promise.all([...pools, refused].map((p) => p.end()));
});

let next = 0;
claimStoreSuite('PostgresStore', () => stores[next++ % stores.length]!, {
  unavailable: () => new PostgresStore(refused, { table, timeoutMs: 2_000 }),
});

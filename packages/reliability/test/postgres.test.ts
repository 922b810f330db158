/**
 * Exactly once with PostgreSQL as the store: three worker processes (the real Express binding
 * over `PostgresStore`) on a private PostgreSQL server started for this file, and this process
 * as the provider. Every handler run is a row in the shared server's run table (no unique
 * constraint), so a double run shows. The tests run in order and share the server and workers.
 */
import { randomUUID } from 'node:crypto';
import { PostgresStore } from '@hookgate/pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  copies,
  events,
  expectAcknowledged,
  expectExactlyOnce,
  expectHealthyWorkers as expectHealthy,
  keysOf,
  redeliverEach,
} from '../src/checks.js';
import { Ledger } from '../src/ledger.js';
import { PostgresServer } from '../src/postgres-server.js';
import { mulberry32, Provider, storm } from '../src/provider.js';
import { report } from '../src/report.js';
import { seed, sleep } from '../src/util.js';
import { spawnWorkers, stopAll, type Worker } from '../src/workers.js';

const TIMEOUT_MS = 500;
const CLAIM_TTL_MS = 6_000;
const SEED = seed();
const rng = mulberry32(SEED);
const secret = randomUUID();
const namespace = `relpg-${randomUUID().slice(0, 8)}`;
const storeTable = 'hookgate_claims';

let server: PostgresServer;
let admin: pg.Pool;
let ledger: Ledger;
let workers: Worker[] = [];
let provider: Provider;

beforeAll(async () => {
  console.log(`[reliability] postgres seed ${SEED} (replay with HOOKGATE_SEED=${SEED})`);
  [server, ledger] = await Promise.all([PostgresServer.start(), Ledger.open('pgstorm')]);
  admin = new pg.Pool({ connectionString: server.url, max: 2 });
  admin.on('error', () => {});
  admin.on('connect', (connection) => connection.on('error', () => {}));
  await new PostgresStore(admin, { table: storeTable }).setup();
  workers = await spawnWorkers(3, {
    postgres: { url: server.url, table: storeTable },
    table: ledger.table,
    namespace,
    secret,
    claimTtlMs: CLAIM_TTL_MS,
    timeoutMs: TIMEOUT_MS,
  });
  provider = new Provider({
    secret,
    rng,
    targets: () => workers.filter((w) => w.alive).map((w) => w.url),
  });
}, 120_000);

afterAll(async () => {
  await stopAll(workers);
  await admin?.end();
  await Promise.all([server?.dispose(), ledger?.close()]);
});

/** Every worker still alive, none saw an unhandled rejection. */
async function expectHealthyWorkers(): Promise<void> {
  for (const worker of workers) expect(worker.alive, worker.stderr).toBe(true);
  await expectHealthy(workers);
}

describe('PostgresStore under a redelivery storm', () => {
  it('every event of a storm across three workers runs exactly once, and none is lost', async () => {
    const list = events('pgstorm', 200);
    const result = await storm(provider, list, rng, { copies, concurrency: 24 });
    const tally = await ledger.tally('evt:pgstorm-', keysOf(list));
    report('postgres-storm', { processes: workers.length, ...result, ...tally });
    expectExactlyOnce(tally, result);
    expect(result.statuses[409] ?? 0).toBeGreaterThan(0);
    await expectHealthyWorkers();
  });

  it('the server stopped (a crash) mid-storm and started again: 503 within the deadline meanwhile, then every event exactly once', async () => {
    const list = events('pgstop', 150);
    let stoppedAt = 0;
    let startedAt = 0;
    let outage: Promise<void> | undefined;
    const result = await storm(provider, list, rng, {
      copies,
      concurrency: 24,
      onProgress: (settled, total) => {
        if (outage !== undefined || settled < total / 4) return;
        outage = (async () => {
          await server.stop('immediate');
          stoppedAt = performance.now();
          await sleep(1_500);
          await server.resume();
          startedAt = performance.now();
        })();
      },
    });
    await outage;
    const during = provider.attempts.filter((a) => a.at > stoppedAt && a.at < startedAt);
    const unavailable = during.filter((a) => a.status === 503);
    const tally = await ledger.tally('evt:pgstop-', keysOf(list));
    report('postgres-stop', {
      processes: workers.length,
      ...result,
      outageMs: Math.round(startedAt - stoppedAt),
      answersDuringOutage: during.length,
      slowest503Ms: Math.round(Math.max(0, ...unavailable.map((a) => a.ms))),
      ...tally,
    });
    expect(stoppedAt).toBeGreaterThan(0);
    expect(unavailable.length).toBeGreaterThan(0);
    // No hang: during the outage every answer is a 503, a 409 (a claim made before it) or the
    // 200 of a handler that had claimed before.
    const statuses = [...new Set(during.map((a) => a.status))];
    expect(statuses.filter((s) => ![200, 409, 503].includes(s))).toEqual([]);
    expect(Math.max(...unavailable.map((a) => a.ms))).toBeLessThan(TIMEOUT_MS + 1_500);
    expectExactlyOnce(tally, result);
    // The claims are on disk: a late redelivery of every event is a duplicate.
    expectAcknowledged(await redeliverEach(provider, list), list.length);
    expectExactlyOnce(await ledger.tally('evt:pgstop-', keysOf(list)));
    await expectHealthyWorkers();
  });

  it("every worker's connections terminated mid-storm (pg_terminate_backend): every event exactly once, and the workers live on", async () => {
    const list = events('pgterm', 150);
    let kills = 0;
    let terminating: Promise<void> | undefined;
    const result = await storm(provider, list, rng, {
      copies,
      concurrency: 24,
      onProgress: (settled, total) => {
        if (terminating !== undefined || settled < total / 4) return;
        terminating = (async () => {
          for (let round = 0; round < 5; round++) {
            const { rows } = await admin.query(
              `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
               WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`,
            );
            kills += rows[0].n;
            await sleep(150);
          }
        })();
      },
    });
    await terminating;
    const tally = await ledger.tally('evt:pgterm-', keysOf(list));
    const decisions: Record<string, number> = {};
    for (const stats of await Promise.all(workers.map((w) => w.stats()))) {
      for (const [decision, n] of Object.entries(stats.decisions)) {
        decisions[decision] = (decisions[decision] ?? 0) + (n ?? 0);
      }
    }
    report('postgres-terminate', {
      processes: workers.length,
      ...result,
      kills,
      decisions,
      ...tally,
    });
    expect(kills).toBeGreaterThan(0);
    expectExactlyOnce(tally, result);
    await expectHealthyWorkers();
  });
});

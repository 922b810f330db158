/**
 * Resharding under a storm: a three-master Redis Cluster, and while deliveries run, a fourth
 * master is added, the slots are rebalanced onto it (`redis-cli --cluster rebalance
 * --cluster-use-empty-masters`), then the slots the storm's keys live in are moved between
 * masters one after another, slowly (a pause between key batches). For each client: ioredis as
 * configured by default, ioredis with auto-pipelining (whose mixed batches pass `-ASK` on: the
 * store follows it), and node-redis. Every handler run is a row in PostgreSQL: 0 double, 0 lost,
 * and the 503 and 409 answers the resharding causes are reported.
 */
import { randomUUID } from 'node:crypto';
import { type RedisCluster, type RedisServer, startCluster } from '@hookgate/redis-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  copies,
  events,
  expectAcknowledged,
  expectExactlyOnce,
  expectHealthyWorkers,
  keysOf,
  redeliverEach,
} from '../src/checks.js';
import { Ledger } from '../src/ledger.js';
import { mulberry32, Provider, storm } from '../src/provider.js';
import { report } from '../src/report.js';
import { seed, sleep } from '../src/util.js';
import { type RedisClientKind, spawnWorkers, stopAll, type Worker } from '../src/workers.js';

const SEED = seed();
const rng = mulberry32(SEED);
const secret = randomUUID();

let ledger: Ledger;

beforeAll(async () => {
  console.log(`[reliability] reshard seed ${SEED} (replay with HOOKGATE_SEED=${SEED})`);
  ledger = await Ledger.open('reshard');
});
afterAll(async () => {
  await ledger?.close();
});

/** The slots of the storm's claim keys, busiest first. */
async function hotSlots(cluster: RedisCluster, keys: readonly string[]): Promise<number[]> {
  const counts = new Map<number, number>();
  for (const key of keys) {
    const slot = Number(await cluster.nodes[0]!.command('CLUSTER', 'KEYSLOT', key));
    counts.set(slot, (counts.get(slot) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([slot]) => slot);
}

describe('resharding a Redis Cluster mid-storm', () => {
  for (const client of ['ioredis', 'ioredis-pipelined', 'node-redis'] as RedisClientKind[]) {
    it(`${client}: a master added, slots rebalanced onto it and hot slots moved while deliveries run; every event exactly once`, async () => {
      const cluster = await startCluster({ masters: 3 });
      let workers: Worker[] = [];
      try {
        const namespace = `reshard-${client}-${randomUUID().slice(0, 8)}`;
        workers = await spawnWorkers(
          2,
          {
            cluster: cluster.rootNodes,
            client,
            table: ledger.table,
            namespace,
            secret,
            claimTtlMs: 6_000,
            timeoutMs: 1_000,
          },
          `rs-${client}`,
        );
        const provider = new Provider({ secret, rng, targets: () => workers.map((w) => w.url) });
        const prefix = `rs-${client}`;
        // Rounds of 150 events, delivered until the resharding is over (at least two): the hot
        // slots are those of the first rounds' keys, moved while those rounds run.
        const rounds = Array.from({ length: 8 }, (_, r) => events(`${prefix}-r${r}`, 150));
        const claimKeys = rounds
          .slice(0, 3)
          .flat()
          .map((event) => `${namespace}:evt:${event.id}`);
        const slots = await hotSlots(cluster, claimKeys);
        let moved = 0;
        let added: RedisServer | undefined;
        let resharding: Promise<void> | undefined;
        let reshardError: unknown;
        let finished = false;
        let reshardedAt = 0;
        let doneAt = 0;
        const delivered: ReturnType<typeof events> = [];
        const results = [];
        for (const [r, list] of rounds.entries()) {
          if (r >= 2 && finished) break;
          delivered.push(...list);
          results.push(
            await storm(provider, list, rng, {
              copies,
              concurrency: 8,
              onProgress: (settled, total) => {
                if (resharding !== undefined || settled < total / 4) return;
                reshardedAt = performance.now();
                resharding = (async () => {
                  added = await cluster.addMaster();
                  await cluster.rebalance();
                  // Then the hot slots, one after another, each to another master, slowly.
                  const masters = await cluster.masters();
                  for (const slot of slots.slice(0, 12)) {
                    // The next master in turn that does not serve it already.
                    for (let next = 0; next < masters.length; next++) {
                      const target = masters[(moved + next) % masters.length]!;
                      if (await cluster.moveSlot(slot, target, 50)) {
                        moved++;
                        break;
                      }
                    }
                  }
                  doneAt = performance.now();
                })()
                  .catch((error: unknown) => {
                    reshardError = error;
                  })
                  .finally(() => {
                    finished = true;
                  });
              },
            }),
          );
        }
        await resharding;
        if (reshardError !== undefined) throw reshardError;
        await cluster.waitHealthy();
        const result = {
          deliveries: results.reduce((n, r) => n + r.deliveries, 0),
          failed: results.reduce((n, r) => n + r.failed, 0),
          statuses: results.reduce(
            (all, r) => {
              for (const [status, n] of Object.entries(r.statuses))
                all[status] = (all[status] ?? 0) + n;
              return all;
            },
            {} as Record<string, number>,
          ),
        };
        const tally = await ledger.tally(`evt:${prefix}-`, keysOf(delivered));
        const during = provider.attempts.filter((a) => a.at > reshardedAt && a.at < doneAt);
        const count = (status: number) => during.filter((a) => a.status === status).length;
        report(`reshard-${client}`, {
          ...result,
          rounds: results.length,
          reshardMs: Math.round(doneAt - reshardedAt),
          slotsMoved: moved,
          answersDuringReshard: during.length,
          unavailableDuringReshard: count(503),
          inFlightDuringReshard: count(409),
          ...tally,
        });
        expect(added).toBeDefined();
        expect(moved).toBe(Math.min(12, slots.length)); // each to a master that did not serve it
        expectExactlyOnce(tally);
        expect(result.failed).toBe(0);
        // The deliveries kept coming all through the resharding.
        expect(results.length).toBeGreaterThanOrEqual(2);
        expect(during.length).toBeGreaterThan(100);
        // A late redelivery of every event is a duplicate: no done record was lost in a move.
        expectAcknowledged(await redeliverEach(provider, delivered), delivered.length);
        expectExactlyOnce(await ledger.tally(`evt:${prefix}-`, keysOf(delivered)));
        await expectHealthyWorkers(workers);
      } finally {
        await stopAll(workers);
        await cluster.dispose();
      }
      // Let the machine settle between clients.
      await sleep(100);
    }, 240_000);
  }
});

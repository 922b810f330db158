import { claimStoreSuite, type StoreFactory } from '@hookgate/store-conformance';
import { afterAll, beforeAll, vi } from 'vitest';
import { type RedisCluster, startCluster } from '../cluster.js';
import { deadPort, type RedisServer, startRedis } from '../server.js';
import { type RedisDriver, tracked } from './driver.js';

/** How soon the stores below, with a 300 ms deadline, must fail when Redis is out of reach. */
const UNAVAILABLE = { timeoutMs: 300 };
const UNAVAILABLE_WITHIN_MS = 2_000;

/**
 * Stores over a round robin of `size` clients made on first use: successive stores use
 * separate connections, as the conformance suite wants.
 */
function roundRobin<C extends object>(
  driver: RedisDriver<C>,
  make: () => Promise<C>,
  size = 4,
): StoreFactory {
  const pool: Promise<C>[] = [];
  let next = 0;
  return async () => {
    if (pool.length < size) pool.push(make());
    return driver.store(await pool[next++ % pool.length]!);
  };
}

/**
 * `@hookgate/store-conformance` against a standalone server and a three-master cluster, with
 * the plain client (and an unreachable one, for the `errors` tests) and with every variant.
 */
export function conformanceTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  // The suite's TTL and error tests mostly wait: let them all wait at once.
  vi.setConfig({ maxConcurrency: 20 });
  let server: RedisServer;
  let cluster: RedisCluster;
  // Where the unreachable clients point: held, so that no Redis started meanwhile takes it.
  let dead: Awaited<ReturnType<typeof deadPort>>;
  beforeAll(async () => {
    [server, cluster, dead] = await Promise.all([
      startRedis(),
      startCluster({ masters: 3 }),
      deadPort(),
    ]);
  });
  afterAll(async () => {
    driver.disposeAll();
    await Promise.all([server?.dispose(), cluster?.dispose(), dead?.close()]);
  });

  claimStoreSuite(
    'standalone',
    roundRobin(driver, () => driver.client(server.port)),
    {
      // A client that can never connect: commands wait in its offline queue until the deadline.
      unavailable: async () => driver.store(await driver.unreachable(dead.port), UNAVAILABLE),
      unavailableWithinMs: UNAVAILABLE_WITHIN_MS,
    },
  );
  claimStoreSuite(
    'three-master cluster',
    roundRobin(driver, () => driver.cluster(cluster.rootNodes)),
    {
      unavailable: async () =>
        driver.store(await driver.unreachableCluster(cluster.rootNodes, dead.port), UNAVAILABLE),
      unavailableWithinMs: UNAVAILABLE_WITHIN_MS,
    },
  );
  for (const variant of driver.variants ?? []) {
    claimStoreSuite(
      `standalone ${variant.label}`,
      roundRobin(driver, () => variant.client(server.port)),
    );
    const { cluster: clusterClient } = variant;
    if (clusterClient) {
      claimStoreSuite(
        `three-master cluster ${variant.label}`,
        roundRobin(driver, () => clusterClient(cluster.rootNodes)),
      );
    }
  }
}

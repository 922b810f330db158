import {
  freePort,
  type RedisCluster,
  type RedisServer,
  startCluster,
  startRedis,
} from '@hookgate/redis-harness';
import { claimStoreSuite } from '@hookgate/store-conformance';
import { afterAll, beforeAll, vi } from 'vitest';
import { NodeRedisStore } from '../src/index.js';
import { destroyAll, majors, roundRobin, type TestClient } from './clients.js';

/** Stores over a round robin of clients: successive stores use separate connections. */
function stores(make: () => Promise<TestClient>) {
  const next = roundRobin(make);
  return async () => new NodeRedisStore(await next());
}

/** The conformance suite against one node-redis major: standalone RESP2 and RESP3, cluster. */
export function registerConformance(major: 5 | 6): void {
  const { client, cluster: clusterClient } = majors[major];
  // The suite's TTL and error tests mostly wait: let them all wait at once.
  vi.setConfig({ maxConcurrency: 20 });
  let server: RedisServer;
  let cluster: RedisCluster;
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedis(), startCluster({ masters: 3 })]);
  });
  afterAll(async () => {
    destroyAll();
    await Promise.all([server?.dispose(), cluster?.dispose()]);
  });

  claimStoreSuite(
    `NodeRedisStore, redis ${major}, standalone`,
    stores(() => client(server.port)),
    {
      // A client that never connects: commands wait in its offline queue until the deadline.
      unavailable: async () =>
        new NodeRedisStore(await client(await freePort(), { connect: false }), { timeoutMs: 300 }),
      unavailableWithinMs: 2_000,
    },
  );

  claimStoreSuite(
    `NodeRedisStore, redis ${major}, standalone over RESP3`,
    stores(() => client(server.port, { RESP: 3 })),
  );

  claimStoreSuite(
    `NodeRedisStore, redis ${major}, three-master cluster${major === 6 ? ' over RESP3' : ''}`,
    stores(() => clusterClient(cluster.rootNodes, major === 6 ? { RESP: 3 } : {})),
    {
      // Connected, then the whole cluster is out of reach for this client: closed.
      unavailable: async () => {
        const closed = await clusterClient(cluster.rootNodes);
        closed.destroy();
        return new NodeRedisStore(closed, { timeoutMs: 300 });
      },
      unavailableWithinMs: 2_000,
    },
  );
}

import {
  type RedisCluster,
  type RedisServer,
  startCluster,
  startRedis,
} from '@hookgate/redis-harness';
import { claimStoreSuite } from '@hookgate/store-conformance';
import { afterAll, beforeAll, vi } from 'vitest';
import { type IoRedisClient, IoRedisStore } from '../src/index.js';
import { deadPort, disconnectAll, majors, quiet, roundRobin, track } from './clients.js';

/** Stores over a round robin of clients: successive stores use separate connections. */
function stores(make: () => IoRedisClient & { disconnect(): void }) {
  const next = roundRobin(make);
  return () => new IoRedisStore(next());
}

/** The conformance suite against one ioredis major: standalone (RESP2 and 3), prefixed, cluster. */
export function registerConformance(major: 5 | 6): void {
  const { redis, cluster: clusterClient } = majors[major];
  // The suite's TTL and error tests mostly wait: let them all wait at once.
  vi.setConfig({ maxConcurrency: 20 });
  let server: RedisServer;
  let cluster: RedisCluster;
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedis(), startCluster({ masters: 3 })]);
  });
  afterAll(async () => {
    disconnectAll();
    await Promise.all([server?.dispose(), cluster?.dispose()]);
  });

  claimStoreSuite(
    `IoRedisStore, ioredis ${major}, standalone`,
    stores(() => redis(server.port)),
    {
      // A client that can never connect: commands wait in its offline queue until the deadline.
      unavailable: async () =>
        new IoRedisStore(quiet(track(redis(await deadPort()))), { timeoutMs: 300 }),
      unavailableWithinMs: 2_000,
    },
  );

  claimStoreSuite(
    `IoRedisStore, ioredis ${major}, standalone with keyPrefix and auto-pipelining`,
    stores(() => redis(server.port, { keyPrefix: 'tenant-a:', enableAutoPipelining: true })),
  );

  if (major === 6) {
    claimStoreSuite(
      'IoRedisStore, ioredis 6, standalone over RESP3',
      stores(() => redis(server.port, { protocol: 3 })),
    );
  }

  claimStoreSuite(
    `IoRedisStore, ioredis ${major}, three-master cluster with ${major === 6 ? 'auto-pipelining' : 'keyPrefix'}`,
    stores(() =>
      clusterClient(
        cluster.rootNodes,
        major === 6 ? { enableAutoPipelining: true } : { keyPrefix: 'tenant-b:' },
      ),
    ),
    {
      unavailable: async () =>
        new IoRedisStore(
          quiet(track(clusterClient([{ host: '127.0.0.1', port: await deadPort() }]))),
          { timeoutMs: 300 },
        ),
      unavailableWithinMs: 2_000,
    },
  );
}

/**
 * Peers: `gate.run` over IoRedisStore, and over NodeRedisStore, against other idempotency
 * libraries doing the same job (a new delivery: claim, the handler, store the outcome), each as
 * its documentation sets it up, in one process, against the bench's own Redis, in the same
 * alternating rounds. NodeRedisStore is there because both peers use node-redis, which writes
 * the commands of one tick to the socket in one write, where ioredis writes each on its own:
 * at c=64 that difference is the client, not the library.
 *
 * - node-idempotency (`@node-idempotency/core` over `@node-idempotency/storage-adapter-redis`,
 *   which makes its own node-redis 4 client): `SET key NX PX` of an in-progress record, the
 *   handler, then a plain `SET` of the response (no owner check). Called as its core API allows
 *   for an event: the event id as the `Idempotency-Key` header, no body (a body would be
 *   hashed with BLAKE2s too: more work on its side).
 * - Powertools for AWS Lambda (`@aws-lambda-powertools/idempotency`, `makeIdempotent` with its
 *   `CachePersistenceLayer` over a node-redis 6 client): `SET key NX EX` of an in-progress
 *   record keyed by the MD5 of the JMESPath-selected `id`, the handler, `SET key EX` of the
 *   result.
 */
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { createGate } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { NodeRedisStore } from '@hookgate/node-redis';
import type { RedisServer } from '@hookgate/redis-harness';
import { Idempotency } from '@node-idempotency/core';
import { RedisStorageAdapter } from '@node-idempotency/storage-adapter-redis';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { alternate, asyncSide, type Plan, type Row, type Stats, startBurner } from './measure.js';
import { nextId, serverCpu } from './redis.js';

const handler = () => 'ok';

interface Peers {
  hookgate(id: string): Promise<unknown>;
  hookgateNodeRedis(id: string): Promise<unknown>;
  nodeIdempotency(id: string): Promise<unknown>;
  powertools(id: string): Promise<unknown>;
  close(): Promise<void>;
}

async function connectPeers(server: RedisServer): Promise<Peers> {
  const socket = { host: '127.0.0.1', port: server.port };

  const io = new Redis(socket);
  await io.ping();
  const gate = createGate({ store: new IoRedisStore(io), eventId: 'id' });
  const nodeRedis = createClient({ socket });
  nodeRedis.on('error', () => {});
  await nodeRedis.connect();
  const nodeRedisGate = createGate({ store: new NodeRedisStore(nodeRedis), eventId: 'id' });

  const storage = new RedisStorageAdapter({ socket });
  await storage.connect();
  const idempotency = new Idempotency(storage);

  const client = createClient({ socket });
  client.on('error', () => {});
  await client.connect();
  // As in a Lambda function: the context tells how long the invocation has left (the claim's
  // in-progress expiry); without one, Powertools warns on every call.
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'id' });
  config.registerLambdaContext({
    getRemainingTimeInMillis: () => 300_000,
  } as unknown as Parameters<IdempotencyConfig['registerLambdaContext']>[0]);
  const idempotent = makeIdempotent(async (_event: { id: string }) => handler(), {
    persistenceStore: new CachePersistenceLayer({
      client: client as unknown as ConstructorParameters<typeof CachePersistenceLayer>[0]['client'],
    }),
    config,
  });

  return {
    hookgate: (id) => gate.run({ payload: { id } }, handler),
    hookgateNodeRedis: (id) => nodeRedisGate.run({ payload: { id } }, handler),
    async nodeIdempotency(id) {
      const request = { headers: { 'idempotency-key': id }, path: '/webhook', method: 'POST' };
      const cached = await idempotency.onRequest(request);
      if (cached !== undefined) return cached;
      const body = handler();
      await idempotency.onResponse(request, { body });
      return body;
    },
    powertools: (id) => idempotent({ id }),
    async close() {
      io.disconnect();
      nodeRedis.destroy();
      await storage.disconnect();
      client.destroy();
    },
  };
}

/** Deliveries per side for the Redis CPU of the c=64 rows (about 0.4 s for the three). */
const REDIS_CPU_SAMPLE = 5_000;

/** µs of this process's CPU per delivery. */
const clientUs = (stats: Stats) => 1e6 / stats.opsPerCpuSec;

/** The target ratios: hookgate against each peer, at each concurrency. */
const TARGETS = {
  nodeIdempotency: { 1: 1.0, 64: 1.2 },
  powertools: { 1: undefined, 64: 2.5 },
} as const;

/**
 * Each concurrency is one four-way comparison (hookgate over each store, node-idempotency,
 * Powertools), so the rows of a concurrency share each side's rounds. With `busy: 'both'`,
 * everything is measured again with a second process burning one core; with `'already'`, the
 * whole run has one (`--burn`) and the rows say so.
 */
export async function peersBench(
  server: RedisServer,
  plan: Plan,
  busy: 'both' | 'already' = 'both',
): Promise<Row[]> {
  const rows: Row[] = [];
  const peers = await connectPeers(server);
  const flush = () => server.command('FLUSHALL');
  const measure = async (label: string) => {
    for (const concurrency of [64, 1] as const) {
      await flush();
      const [hookgate, hookgateNodeRedis, nodeIdempotency, powertools] = await alternate(
        [
          asyncSide(() => peers.hookgate(nextId()), concurrency),
          asyncSide(() => peers.hookgateNodeRedis(nextId()), concurrency),
          asyncSide(() => peers.nodeIdempotency(nextId()), concurrency),
          asyncSide(() => peers.powertools(nextId()), concurrency),
        ],
        plan,
      );
      // Where each side's CPU goes at c=64 on a quiet core: this process's (from the rounds
      // above) and Redis's (a pass of its own per side), per delivery.
      const redisUs =
        concurrency === 64 && label === ''
          ? {
              hookgate: await serverCpu(server, () => peers.hookgate(nextId()), REDIS_CPU_SAMPLE),
              hookgateNodeRedis: await serverCpu(
                server,
                () => peers.hookgateNodeRedis(nextId()),
                REDIS_CPU_SAMPLE,
              ),
              nodeIdempotency: await serverCpu(
                server,
                () => peers.nodeIdempotency(nextId()),
                REDIS_CPU_SAMPLE,
              ),
            }
          : undefined;
      for (const [store, side, ours] of [
        ['IoRedisStore', 'hookgate', hookgate!],
        ['NodeRedisStore', 'hookgateNodeRedis', hookgateNodeRedis!],
      ] as const) {
        for (const [peer, name, stats] of [
          ['nodeIdempotency', 'node-idempotency 1.0 (node-redis 4)', nodeIdempotency!],
          ['powertools', 'Powertools idempotency 2.35 (node-redis 6)', powertools!],
        ] as const) {
          const ratio = TARGETS[peer][concurrency];
          const redis =
            redisUs !== undefined && peer === 'nodeIdempotency'
              ? `; Redis CPU ${redisUs[side].toFixed(1)} µs, the peer's ${redisUs[peer].toFixed(1)} µs (INFO cpu, ${REDIS_CPU_SAMPLE.toLocaleString('en')} at c=64)`
              : '';
          rows.push({
            section: 'Peers',
            name: `gate.run over ${store}, new delivery, c=${concurrency}${label}`,
            note: `client CPU ${clientUs(ours).toFixed(1)} µs per delivery, the peer's ${clientUs(stats).toFixed(1)} µs${redis}`,
            stats: ours,
            baseline: { name, stats },
            ...(ratio === undefined ? {} : { target: { ratio } }),
          });
        }
      }
    }
  };
  try {
    if (busy === 'already') {
      await measure(', one core burnt (--burn)');
    } else {
      await measure('');
      const burner = await startBurner();
      try {
        await measure(', one core burnt');
      } finally {
        burner.stop();
      }
    }
  } finally {
    await peers.close();
  }
  return rows;
}

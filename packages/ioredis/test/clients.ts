import { freePort } from '@hookgate/redis-harness';
import * as ioredis5 from 'ioredis5';
import * as ioredis6 from 'ioredis6';

type RedisOptions = ioredis5.RedisOptions & ioredis6.RedisOptions;
type ClusterOptions = ioredis5.ClusterOptions & ioredis6.ClusterOptions;
type Node = { host: string; port: number };

/** How the tests make clients of one ioredis major. */
export interface Major {
  major: 5 | 6;
  redis(port: number, options?: RedisOptions): ioredis5.Redis | ioredis6.Redis;
  cluster(nodes: Node[], options?: ClusterOptions): ioredis5.Cluster | ioredis6.Cluster;
}

/** Both supported majors, under test side by side. */
export const majors: Record<5 | 6, Major> = {
  5: {
    major: 5,
    redis: (port, options = {}) => new ioredis5.Redis({ host: '127.0.0.1', port, ...options }),
    cluster: (nodes, options = {}) => new ioredis5.Cluster(nodes, options),
  },
  6: {
    major: 6,
    redis: (port, options = {}) => new ioredis6.Redis({ host: '127.0.0.1', port, ...options }),
    cluster: (nodes, options = {}) => new ioredis6.Cluster(nodes, options),
  },
};

interface Disconnectable {
  disconnect(): void;
}

/** Every client the tests made, to disconnect in `afterAll`. */
const made: Disconnectable[] = [];

/** Remember a client so that {@link disconnectAll} closes it. */
export function track<C extends Disconnectable>(client: C): C {
  made.push(client);
  return client;
}

export function disconnectAll(): void {
  for (const client of made.splice(0)) client.disconnect();
}

/**
 * Round robin over `size` clients made on first use: successive stores get separate
 * connections, as the conformance suite wants.
 */
export function roundRobin<C extends Disconnectable>(make: () => C, size = 4): () => C {
  const pool: C[] = [];
  let next = 0;
  return () => {
    if (pool.length < size) {
      const client = track(make());
      pool.push(client);
      return client;
    }
    return pool[next++ % size]!;
  };
}

/** A port nothing listens on (the harness never hands out 6379). */
export const deadPort = () => freePort();

/** Silence the "Unhandled error event" log of a client that is meant to fail to connect. */
export function quiet<C extends { on(event: 'error', listener: () => void): unknown }>(
  client: C,
): C {
  client.on('error', () => {});
  return client;
}

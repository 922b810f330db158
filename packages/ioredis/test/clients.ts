import type { RedisDriver } from '@hookgate/redis-harness/adapter-suite';
import * as ioredis5 from 'ioredis5';
import * as ioredis6 from 'ioredis6';
import { IoRedisStore } from '../src/index.js';

type RedisOptions = ioredis5.RedisOptions & ioredis6.RedisOptions;
type ClusterOptions = ioredis5.ClusterOptions & ioredis6.ClusterOptions;
type Node = { host: string; port: number };
type Client = ioredis5.Redis | ioredis6.Redis | ioredis5.Cluster | ioredis6.Cluster;

/** A client of one ioredis major, not waiting for it to connect. */
export function redis(major: 5 | 6, port: number, options: RedisOptions = {}): Client {
  const all = { host: '127.0.0.1', port, ...options };
  return quiet(major === 5 ? new ioredis5.Redis(all) : new ioredis6.Redis(all));
}

function cluster(major: 5 | 6, nodes: Node[], options: ClusterOptions = {}): Client {
  return quiet(
    major === 5 ? new ioredis5.Cluster(nodes, options) : new ioredis6.Cluster(nodes, options),
  );
}

/** Silence the "Unhandled error event" log of a client that is meant to fail. */
function quiet<C extends { on(event: 'error', listener: () => void): unknown }>(client: C): C {
  client.on('error', () => {});
  return client;
}

async function ready(client: Client): Promise<Client> {
  await client.ping();
  return client;
}

/** How the shared Redis adapter suite makes ioredis clients of one major. */
export function driver(major: 5 | 6): RedisDriver<Client> {
  return {
    store: (client, options) => new IoRedisStore(client, options),
    client: (port) => ready(redis(major, port)),
    cluster: (nodes) => ready(cluster(major, nodes)),
    // Commands wait in the offline queue while the client tries to connect.
    unreachable: (port) => redis(major, port),
    unreachableCluster: (_nodes, port) => cluster(major, [{ host: '127.0.0.1', port }]),
    ping: (client) => client.ping(),
    close: (client) => client.quit(),
    dispose: (client) => client.disconnect(),
    // ioredis remembers the scripts defined with defineCommand; the store must define none.
    internals: (client) => Object.keys((client as { scriptsSet?: object }).scriptsSet ?? {}),
    variants: [
      {
        label: 'with keyPrefix and auto-pipelining',
        keyPrefix: 'tenant-a:',
        client: (port) =>
          ready(redis(major, port, { keyPrefix: 'tenant-a:', enableAutoPipelining: true })),
        cluster: (nodes) =>
          ready(cluster(major, nodes, { keyPrefix: 'tenant-a:', enableAutoPipelining: true })),
      },
      // ioredis 6 speaks RESP3 unless told otherwise (ioredis 5 speaks RESP2 only): the plain
      // client above covers RESP3, this one RESP2.
      ...(major === 6
        ? [
            {
              label: 'over RESP2',
              client: (port: number) => ready(redis(6, port, { protocol: 2 })),
              cluster: (nodes: Node[]) =>
                ready(cluster(6, nodes, { redisOptions: { protocol: 2 } })),
            },
          ]
        : []),
    ],
  };
}

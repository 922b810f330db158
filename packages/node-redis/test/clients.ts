import type { RedisDriver } from '@hookgate/redis-harness/adapter-suite';
import * as redis5 from 'redis5';
import * as redis6 from 'redis6';
import { NodeRedisStore } from '../src/index.js';

type Node = { host: string; port: number };

/** What the tests need of a node-redis client or cluster. */
export interface TestClient {
  set(key: string, value: string, options: object): Promise<unknown>;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  ping(): Promise<unknown>;
  destroy(): void;
  /** Connected and ready for commands (false once the client saw its socket close). */
  readonly isReady: boolean;
}

export interface ClientOptions {
  RESP?: 2 | 3;
  disableOfflineQueue?: boolean;
}

/** The two supported majors, under test side by side. */
const libraries = { 5: redis5, 6: redis6 } as const;

// node-redis emits 'error' for every failed (re)connection: without a listener that is an
// uncaught exception. The tests expect failures, so listen and ignore.
const ignore = () => {};

/** A client of one node-redis major, connected unless `connect` is false (then connecting in the background). */
export async function client(
  major: 5 | 6,
  port: number,
  { connect = true, ...options }: ClientOptions & { connect?: boolean } = {},
): Promise<TestClient> {
  const client = (libraries[major] as typeof redis6).createClient({
    socket: { host: '127.0.0.1', port, reconnectStrategy: () => 50 },
    ...options,
  });
  client.on('error', ignore);
  const connecting = client.connect();
  if (connect) await connecting;
  else connecting.catch(ignore);
  return client;
}

/** A connected cluster client of one node-redis major. */
async function cluster(major: 5 | 6, nodes: Node[], options: ClientOptions = {}) {
  const cluster = (libraries[major] as typeof redis6).createCluster({
    rootNodes: nodes.map(({ host, port }) => ({ socket: { host, port } })),
    defaults: { socket: { reconnectStrategy: () => 50 } },
    ...(options.RESP ? { RESP: options.RESP } : {}),
  });
  cluster.on('error', ignore);
  await cluster.connect();
  return cluster as TestClient;
}

/** How the shared Redis adapter suite makes node-redis clients of one major. */
export function driver(major: 5 | 6): RedisDriver<TestClient> {
  return {
    store: (client, options) => new NodeRedisStore(client, options),
    client: (port) => client(major, port),
    cluster: (nodes) => cluster(major, nodes),
    // Never connects: commands wait in its offline queue until the deadline.
    unreachable: (port) => client(major, port, { connect: false }),
    // Connected, then the whole cluster is out of reach for this client: closed.
    unreachableCluster: async (nodes) => {
      const closed = await cluster(major, nodes);
      closed.destroy();
      return closed;
    },
    ping: (client) => client.ping(),
    close: (client) => client.destroy(),
    dispose: (client) => client.destroy(),
    // After a takeover, a node-redis 5 cluster client can keep failing on the dead master's slots.
    recoversFromDeadMaster: major === 6,
    variants: [
      {
        label: 'over RESP3',
        client: (port) => client(major, port, { RESP: 3 }),
        ...(major === 6 ? { cluster: (nodes: Node[]) => cluster(6, nodes, { RESP: 3 }) } : {}),
      },
    ],
  };
}

import * as redis5 from 'redis5';
import * as redis6 from 'redis6';

type Node = { host: string; port: number };

/** What the tests need of a connected node-redis client or cluster. */
export interface TestClient {
  set(key: string, value: string, options: object): Promise<unknown>;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  destroy(): void;
}

export interface ClientOptions {
  RESP?: 2 | 3;
  disableOfflineQueue?: boolean;
}

/** How the tests make clients of one node-redis major. */
export interface Major {
  major: 5 | 6;
  /** A client, connected unless `connect` is false (then connecting in the background). */
  client(
    port: number,
    options?: ClientOptions & { connect?: boolean },
  ): Promise<TestClient & { ping(): Promise<unknown> }>;
  /** A connected cluster client. */
  cluster(nodes: Node[], options?: ClientOptions): Promise<TestClient>;
}

const made: TestClient[] = [];

/** Close every client the tests made. */
export function destroyAll(): void {
  for (const client of made.splice(0)) {
    try {
      client.destroy();
    } catch {
      // already closed
    }
  }
}

// node-redis emits 'error' for every failed (re)connection: without a listener that is an
// uncaught exception. The tests expect failures, so listen and ignore.
const ignore = () => {};

function fromLibrary(major: 5 | 6, lib: typeof redis5 | typeof redis6): Major {
  return {
    major,
    async client(port, { connect = true, ...options } = {}) {
      const client = (lib as typeof redis6).createClient({
        socket: { host: '127.0.0.1', port, reconnectStrategy: () => 50 },
        ...options,
      });
      client.on('error', ignore);
      made.push(client);
      const connecting = client.connect();
      if (connect) await connecting;
      else connecting.catch(ignore);
      return client;
    },
    async cluster(nodes, options = {}) {
      const cluster = (lib as typeof redis6).createCluster({
        rootNodes: nodes.map(({ host, port }) => ({ socket: { host, port } })),
        defaults: { socket: { reconnectStrategy: () => 50 } },
        ...(options.RESP ? { RESP: options.RESP } : {}),
      });
      cluster.on('error', ignore);
      made.push(cluster);
      await cluster.connect();
      return cluster;
    },
  };
}

/** Both supported majors, under test side by side. */
export const majors: Record<5 | 6, Major> = {
  5: fromLibrary(5, redis5),
  6: fromLibrary(6, redis6),
};

/**
 * Round robin over `size` clients made on first use: successive stores get separate
 * connections, as the conformance suite wants.
 */
export function roundRobin(make: () => Promise<TestClient>, size = 4): () => Promise<TestClient> {
  const pool: Promise<TestClient>[] = [];
  let next = 0;
  return () => {
    if (pool.length < size) {
      const client = make();
      pool.push(client);
      return client;
    }
    return pool[next++ % size]!;
  };
}

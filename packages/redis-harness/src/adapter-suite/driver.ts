import type { ClaimStore } from '@hookgate/core';

/** A node a cluster client starts from. */
export interface RootNode {
  host: string;
  port: number;
}

/**
 * One more configuration of a client: RESP3, a `keyPrefix`, auto-pipelining. The command tests
 * and the conformance suite run under it as under the plain client.
 */
export interface RedisClientVariant<C> {
  /** How its tests are reported, e.g. `'over RESP3'`. */
  label: string;
  /** A connected client of the standalone server on `port`, in this configuration. */
  client(port: number): Promise<C>;
  /** A connected cluster client in this configuration, if it has one. */
  cluster?(nodes: RootNode[]): Promise<C>;
  /** What the client puts before every key (ioredis `keyPrefix`), for tests that read the server. */
  keyPrefix?: string;
}

/**
 * How the suite makes, wraps and closes the clients of one Redis client library at one major.
 * All the suite knows of the client is what these functions do with it.
 */
export interface RedisDriver<C extends object> {
  /** The adapter's store over `client`, e.g. `new IoRedisStore(client, options)`. */
  store(client: C, options?: { timeoutMs?: number }): ClaimStore;
  /** A client of the standalone server on `port`, in its plain configuration, connected. */
  client(port: number): Promise<C>;
  /** A cluster client of the cluster with these root nodes, in its plain configuration, connected. */
  cluster(nodes: RootNode[]): Promise<C>;
  /** A client of `port`, where nothing listens: its commands wait in its offline queue. */
  unreachable(port: number): C | Promise<C>;
  /**
   * A cluster client that cannot reach the cluster: `nodes` are the live cluster's, `port` is
   * one where nothing listens. Its commands must wait or fail, never succeed.
   */
  unreachableCluster(nodes: RootNode[], port: number): C | Promise<C>;
  /** `PING`; resolves with the server's answer. */
  ping(client: C): Promise<unknown>;
  /** Close the client as its owner would (`quit()`, `destroy()`): its commands then fail at once. */
  close(client: C): unknown;
  /** Drop the client at the end of the tests, whatever its state. It may throw. */
  dispose(client: C): void;
  /**
   * What of the client, besides its own properties, the store must leave alone (ioredis: the
   * scripts it has defined).
   */
  internals?(client: C): unknown;
  /**
   * Whether a cluster client works again on its own once a dead master's replica has taken
   * over. `false` skips that test (node-redis 5 keeps failing on the dead master's slots).
   * @default true
   */
  recoversFromDeadMaster?: boolean;
  /** More configurations, each run through the command tests and the conformance suite. */
  variants?: RedisClientVariant<C>[];
}

/**
 * The driver with every client it makes remembered, and `disposeAll` to drop them (for
 * `afterAll`).
 */
export function tracked<C extends object>(
  driver: RedisDriver<C>,
): RedisDriver<C> & { disposeAll(): void } {
  const made: C[] = [];
  const keep = async (client: C | Promise<C>): Promise<C> => {
    const resolved = await client;
    made.push(resolved);
    return resolved;
  };
  return {
    ...driver,
    client: (port) => keep(driver.client(port)),
    cluster: (nodes) => keep(driver.cluster(nodes)),
    unreachable: (port) => keep(driver.unreachable(port)),
    unreachableCluster: (nodes, port) => keep(driver.unreachableCluster(nodes, port)),
    variants: driver.variants?.map((variant) => {
      const { cluster } = variant;
      return {
        ...variant,
        client: (port: number) => keep(variant.client(port)),
        ...(cluster ? { cluster: (nodes: RootNode[]) => keep(cluster(nodes)) } : {}),
      };
    }),
    disposeAll() {
      for (const client of made.splice(0)) {
        try {
          driver.dispose(client);
        } catch {
          // already closed
        }
      }
    },
  };
}

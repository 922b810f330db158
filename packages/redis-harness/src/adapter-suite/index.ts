/**
 * The tests every Redis adapter runs, written once: `@hookgate/ioredis` and
 * `@hookgate/node-redis` differ only in how a client is made, closed and wrapped, which a
 * {@link RedisDriver} says. Each runs it once per client major, from a vitest file:
 *
 * ```ts
 * import { redisAdapterSuite } from '@hookgate/redis-harness/adapter-suite';
 *
 * redisAdapterSuite('ioredis 6', {
 *   store: (client, options) => new IoRedisStore(client, options),
 *   client: async (port) => ready(new Redis({ port })),
 *   // cluster, unreachable, unreachableCluster, ping, close, dispose, variants...
 * });
 * ```
 *
 * Each concern starts its own harness servers. Client-specific behaviour (ioredis
 * `keyPrefix`, node-redis `disableOfflineQueue`) stays in the adapter's own tests.
 *
 * @packageDocumentation
 */
import { describe } from 'vitest';
import { commandTests } from './commands.js';
import { conformanceTests } from './conformance.js';
import type { RedisDriver } from './driver.js';
import { failoverTests } from './failover.js';
import { faultTests } from './faults.js';
import { memoryTests } from './memory.js';
import { redirectTests } from './redirects.js';

export type { RedisClientVariant, RedisDriver, RootNode } from './driver.js';
export { rejection } from './faults.js';

/**
 * Register every shared Redis adapter test under `describe(name)`, one block per concern:
 * `commands` (what the store sends and leaves in Redis, under every variant), `memory` (what
 * its records cost in Redis memory), `faults` (a paused, killed or closed connection),
 * `failover` (a cluster master replaced), `redirects` (a slot that moves while a claim is held:
 * ASK and MOVED followed), and `conformance` (`@hookgate/store-conformance` on a standalone
 * server and a cluster, under every variant).
 *
 * @param name - what the tests are reported under, e.g. `'ioredis 6'`
 * @param driver - how to make, close and wrap the clients of one client library at one major
 */
export function redisAdapterSuite<C extends object>(name: string, driver: RedisDriver<C>): void {
  describe(name, () => {
    describe('commands', () => commandTests(driver));
    describe('memory', () => memoryTests(driver));
    describe('faults', () => faultTests(driver));
    describe('failover', () => failoverTests(driver));
    describe('redirects', () => redirectTests(driver));
    describe('conformance', () => conformanceTests(driver));
  });
}

/**
 * Test harness: starts its own `redis-server` processes on free loopback ports, in temp dirs,
 * and kills, pauses, restarts and fails them over on demand. It never talks to port 6379 (the
 * machine's shared Redis). Every process it starts is SIGKILLed when the test process exits,
 * whether or not the tests passed.
 *
 * ```ts
 * let redis: RedisServer;
 * beforeAll(async () => { redis = await startRedis(); });
 * afterAll(() => redis?.dispose());
 * ```
 *
 * @packageDocumentation
 */
export {
  type ClusterNode,
  keySlot,
  REDIS_CLI,
  RedisCluster,
  type RedisClusterOptions,
  startCluster,
} from './cluster.js';
export { parseInfo, type Reply, ReplyError, rawCommand, SHARED_REDIS_PORT } from './resp.js';
export {
  deadPort,
  freePort,
  REDIS_SERVER,
  RedisServer,
  type RedisServerOptions,
  type ServerState,
  startRedis,
} from './server.js';

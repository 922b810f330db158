import { IoRedisStore } from '@hookgate/ioredis';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

/**
 * Run a binding's suite on Redis: starts a redis-server of the file's own (never the shared
 * one) and one ioredis client before the file's tests, stops both after them, and returns the
 * `store` option for `httpBindingSuite`. Each test gets its own namespace, so they share it.
 */
export function onRedis(): () => IoRedisStore {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.dispose();
  });
  return () => new IoRedisStore(client!, { timeoutMs: 2_000 });
}

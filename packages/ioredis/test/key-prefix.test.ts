import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoRedisStore } from '../src/index.js';
import { redis } from './clients.js';

// ioredis only: a client may put a prefix before every key it sends.
let server: RedisServer;
const made: { disconnect(): void }[] = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const client of made) client.disconnect();
  await server?.dispose();
});

describe.each([5, 6] as const)('ioredis %i', (major) => {
  it("keys carry the client's keyPrefix", async () => {
    const client = redis(major, server.port, { keyPrefix: 'tenant-a:' });
    made.push(client);
    const store = new IoRedisStore(client);
    const key = `hookgate:evt:${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    await store.claim(key, token, 60_000);
    await store.done(key, token, 60_000);
    expect(await server.command('GET', `tenant-a:${key}`)).toBe(`d:${token}`);
    expect(await server.command('GET', key)).toBeNull();
  });
});

import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { rejection } from '@hookgate/redis-harness/adapter-suite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeRedisStore } from '../src/index.js';
import { client, type TestClient } from './clients.js';

// node-redis only: `disableOfflineQueue` fails a command at once while disconnected.
const TIMEOUT = 300;
let server: RedisServer;
const made: TestClient[] = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const client of made) client.destroy();
  await server?.dispose();
});

describe.each([5, 6] as const)('redis %i', (major) => {
  it('with disableOfflineQueue, a disconnected client rejects at once', async () => {
    const connected = await client(major, server.port, { disableOfflineQueue: true });
    made.push(connected);
    const store = new NodeRedisStore(connected, { timeoutMs: TIMEOUT });
    await server.kill();
    try {
      const started = performance.now();
      await rejection(
        store.claim(`hookgate:evt:${crypto.randomUUID()}`, crypto.randomUUID(), 60_000),
      );
      expect(performance.now() - started).toBeLessThan(TIMEOUT);
    } finally {
      await server.restart();
    }
  });
});

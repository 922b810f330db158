import { setTimeout as sleep } from 'node:timers/promises';
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
      // Disconnected as the client sees it: a command sent before it noticed the socket close
      // would wait on the dead socket until the store's deadline, which is not the case here.
      for (let i = 0; connected.isReady && i < 200; i++) await sleep(10);
      expect(connected.isReady).toBe(false);
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

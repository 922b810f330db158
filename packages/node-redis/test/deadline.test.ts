import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { rejection } from '@hookgate/redis-harness/adapter-suite';
import * as redis5 from 'redis5';
import * as redis6 from 'redis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeRedisStore } from '../src/index.js';

// The store's deadline is the one authority over its commands: node-redis's own command
// timeout (5 s by default in node-redis 6) is switched off for them. A client whose own
// timeout is far shorter than the store's shows which one counts.
const TIMEOUT = 300;
const CLIENT_TIMEOUT = 50;
const libraries = { 5: redis5, 6: redis6 } as const;
let server: RedisServer;
const made: Array<{ destroy(): void }> = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const client of made) client.destroy();
  await server?.dispose();
});

describe.each([5, 6] as const)('redis %i', (major) => {
  it('a command abandoned by the store deadline is StoreUnavailableError (outcome unknown), and node-redis still sends it from its offline queue', async () => {
    const client = (libraries[major] as typeof redis6).createClient({
      socket: { host: '127.0.0.1', port: server.port, reconnectStrategy: () => 50 },
      commandOptions: { timeout: CLIENT_TIMEOUT },
    });
    client.on('error', () => {});
    await client.connect();
    made.push(client);
    const store = new NodeRedisStore(client, { timeoutMs: TIMEOUT });
    const key = `hookgate:evt:${crypto.randomUUID()}`;
    await server.kill();
    // Until the client has seen the socket close, a command is written and fails at once.
    while (client.isReady) await new Promise((resolve) => setTimeout(resolve, 5));
    let error: Awaited<ReturnType<typeof rejection>>;
    try {
      const started = performance.now();
      // The claim waits in node-redis's offline queue: the store's deadline rejects it, not
      // node-redis's shorter timeout.
      error = await rejection(store.claim(key, '4503599627370497', 60_000));
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT - 5);
      expect(elapsed).toBeLessThan(TIMEOUT + 1_000);
      expect((error.cause as Error).name).toBe('TimeoutError');
    } finally {
      await server.restart();
    }
    // Unknown, not "not claimed": the abandoned claim was applied once the client reconnected.
    let state: unknown;
    for (let tries = 0; tries < 100 && state === undefined; tries++) {
      state = await store.claim(key, '4503599627370498', 60_000).catch(() => undefined);
      if (state === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(state).toBe('processing');
  });
});

import { randomUUID } from 'node:crypto';
import { createGate, StoreUnavailableError } from '@hookgate/core';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { IoRedisStore } from '../src/index.js';
import { redis } from './clients.js';

// What guarantees.md and errors.md say of a claim whose answer did not come in time, on a real
// Redis that hangs (SIGSTOP) and then carries on: the server still applies it, so the provider's
// retry finds the event in flight until the orphaned claim expires, and then runs it once.
let server: RedisServer;
let client: ReturnType<typeof redis>;
beforeAll(async () => {
  server = await startRedis();
  client = redis(6, server.port);
});
afterAll(async () => {
  if (server?.state === 'paused') server.resume();
  client?.disconnect();
  await server?.dispose();
});

it('a claim the store gave up on is applied by the server: the retry is in-flight until claimTtlMs, then runs', async () => {
  await client.ping();
  const claimTtlMs = 1_500;
  const gate = createGate({
    store: new IoRedisStore(client, { timeoutMs: 200 }),
    eventId: 'id',
    claimTtlMs,
  });
  const delivery = { payload: { id: randomUUID() } };
  let runs = 0;
  server.pause();
  const first = await gate.run(delivery, () => runs++).catch((error: unknown) => error);
  expect(first).toBeInstanceOf(StoreUnavailableError);
  expect(runs).toBe(0);
  server.resume(); // the server runs the claim it was sent while it hung
  expect(await gate.run(delivery, () => runs++)).toMatchObject({ status: 'in-flight' });
  expect(runs).toBe(0);
  // Once the orphaned claim expires, a retry runs it, once.
  await vi.waitFor(
    async () =>
      expect(await gate.run(delivery, () => runs++)).toMatchObject({ status: 'processed' }),
    { timeout: 10 * claimTtlMs, interval: 100 },
  );
  expect(runs).toBe(1);
});

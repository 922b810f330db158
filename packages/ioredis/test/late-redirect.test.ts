/**
 * A redirection (`MOVED`) that arrives after the operation's deadline: the caller has its
 * `StoreUnavailableError` ("outcome unknown") already, and the reply proves the command was not
 * applied, so nothing is sent after it: a resend then would be a write nobody waits for (a
 * claim's, holding the key for `claimTtlMs`). A real server; the cluster node whose first `SET`
 * answers `MOVED` late (one paused during a reshard) is a wrapper.
 */
import { randomUUID } from 'node:crypto';
import { StoreUnavailableError } from '@hookgate/core';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import * as ioredis6 from 'ioredis6';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IoRedisStore } from '../src/index.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.dispose();
});

it('a MOVED answered after the deadline is not followed: the key stays absent', async () => {
  const real = new ioredis6.Redis({ port: server.port });
  real.on('error', () => {});
  await real.ping();
  // The node the redirection names: the real server, through the same connection.
  const node = Object.assign(Object.create(real), {
    options: { host: '127.0.0.1', port: server.port },
  });
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let moved!: () => void;
  const redirected = new Promise<void>((resolve) => {
    moved = resolve;
  });
  const cluster = {
    set: async () => {
      await answered; // the slow node answers once the deadline has passed
      moved();
      throw new Error(`MOVED 1 127.0.0.1:${server.port}`);
    },
    evalsha: real.evalsha.bind(real),
    eval: real.eval.bind(real),
    nodes: () => [node],
    options: {},
  };
  const store = new IoRedisStore(cluster as never, { timeoutMs: 100 });
  const key = `late:${randomUUID()}`;
  try {
    const error = await store.claim(key, '42', 60_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    answer();
    await redirected;
    await new Promise((resolve) => setImmediate(resolve)); // a resend would be sent by now
    // On the connection a resend would have taken: the GET is answered after it.
    expect(await real.get(key)).toBeNull();
  } finally {
    real.disconnect();
  }
});

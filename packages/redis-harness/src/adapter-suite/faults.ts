import { createGate, StoreUnavailableError } from '@hookgate/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisServer, startRedis } from '../server.js';
import { type RedisDriver, tracked } from './driver.js';

const TIMEOUT = 300;
/** The deadline fires between TIMEOUT and TIMEOUT plus a tick; leave room for a busy machine. */
const LATE = TIMEOUT + 1_000;

const key = () => `hookgate:evt:${crypto.randomUUID()}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The `StoreUnavailableError` that `promise` rejects with; fails the test otherwise. */
export async function rejection(promise: Promise<unknown>): Promise<StoreUnavailableError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`resolved with ${String(value)}`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(StoreUnavailableError);
  return error as StoreUnavailableError;
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await sleep(20);
  }
}

/**
 * A server that stops answering, a client its owner closed, a server that dies and comes back
 * without its scripts: the store rejects at its deadline or at once, and works again after.
 * One at a time: they pause, kill and restart the same server (with an AOF).
 */
export function faultTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ appendonly: true, appendfsync: 'always' });
  });
  afterAll(async () => {
    driver.disposeAll();
    await server?.dispose();
  });

  it('a paused server: the claim rejects at its deadline as unknown, and may still land', async () => {
    const store = driver.store(await driver.client(server.port), { timeoutMs: TIMEOUT });
    const claimKey = key();
    const token = crypto.randomUUID();
    server.pause();
    try {
      const started = performance.now();
      const error = await rejection(store.claim(claimKey, token, 60_000));
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT - 1);
      expect(elapsed).toBeLessThan(LATE);
      expect(error.message).toMatch(/no answer within 300 ms.*unknown/);
      expect((error.cause as Error).name).toBe('TimeoutError');
    } finally {
      server.resume();
    }
    // The server answers the command it was sent while paused: the claim was applied after all.
    await until(async () => (await server.command('GET', claimKey)) === `p:${token}`);
    expect(await store.done(claimKey, token, 60_000)).toBe(true);
  });

  it('keeps one timer for any number of pending operations', async () => {
    const store = driver.store(await driver.client(server.port), { timeoutMs: TIMEOUT });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    server.pause();
    try {
      const before = timers();
      const pending = Array.from({ length: 500 }, () =>
        store.claim(key(), crypto.randomUUID(), 60_000).then(
          () => 'resolved',
          (error: unknown) => (error instanceof StoreUnavailableError ? 'unavailable' : error),
        ),
      );
      expect(timers() - before).toBeLessThanOrEqual(1);
      expect(new Set(await Promise.all(pending))).toEqual(new Set(['unavailable']));
    } finally {
      server.resume();
    }
  });

  it('a closed client: operations reject at once, with the client error as cause', async () => {
    const client = await driver.client(server.port);
    const store = driver.store(client, { timeoutMs: TIMEOUT });
    await driver.close(client);
    const started = performance.now();
    const error = await rejection(store.done(key(), crypto.randomUUID(), 60_000));
    expect(performance.now() - started).toBeLessThan(TIMEOUT);
    expect((error.cause as Error).message).toMatch(/closed/i);
  });

  it('a killed server: commands wait in the offline queue until their deadline; after a restart the store works again without its script cache', async () => {
    const client = await driver.client(server.port);
    const store = driver.store(client, { timeoutMs: TIMEOUT });
    const claimKey = key();
    const token = crypto.randomUUID();
    expect(await store.claim(claimKey, token, 60_000)).toBe('acquired');
    await server.kill();
    try {
      const started = performance.now();
      await rejection(store.done(claimKey, token, 60_000));
      expect(performance.now() - started).toBeLessThan(LATE);
    } finally {
      await server.restart();
    }
    // The AOF kept the claim; the restarted server has no scripts, so done goes by EVAL.
    expect(await server.command('SCRIPT', 'EXISTS', '0'.repeat(40))).toEqual([0]);
    await until(async () => (await driver.ping(client)) === 'PONG');
    expect(await store.done(claimKey, token, 60_000)).toBe(true);
    expect(await server.command('GET', claimKey)).toBe(`d:${token}`);
  });

  it('a release met by BUSY (a long script) ends the heartbeat: the claim expires after claimTtlMs and a redelivery runs', async () => {
    const store = driver.store(await driver.client(server.port), { timeoutMs: 2_000 });
    const claimTtlMs = 1_000;
    const gate = createGate({
      store,
      eventId: 'id',
      namespace: `busy-${crypto.randomUUID()}`,
      claimTtlMs,
      heartbeat: { intervalMs: 100 },
    });
    const delivery = { payload: { id: 'evt_busy' } };
    const claim = await gate.claim(delivery);
    expect(claim.acquired).toBe(true);
    await server.command('CONFIG', 'SET', 'busy-reply-threshold', '50');
    // Another client runs a script for ~450 ms: past 50 ms, every other command gets -BUSY.
    const busy = server.command('EVAL', BUSY_FOR_450_MS, '0');
    try {
      await until(async () => {
        const reply = await server.command('PING').then(
          () => 'PONG',
          (error: Error) => error.message,
        );
        return reply.startsWith('BUSY');
      });
      const error = await rejection(claim.release());
      expect(error.message).toMatch(/BUSY/);
    } finally {
      await busy;
      await server.command('CONFIG', 'SET', 'busy-reply-threshold', '5000');
    }
    // The failed release stopped the heartbeat: the claim expires claimTtlMs after the last
    // extension (it would be renewed every 100 ms forever otherwise).
    const deadline = Date.now() + claimTtlMs + 3_000;
    let status = '';
    while (Date.now() < deadline) {
      status = (await gate.run(delivery, () => 'redone')).status;
      if (status === 'processed') break;
      await sleep(50);
    }
    expect(status).toBe('processed');
  });
}

/** A script that keeps Redis busy for about 450 ms. */
const BUSY_FOR_450_MS = `
local t = redis.call('TIME')
local start = tonumber(t[1]) * 1000000 + tonumber(t[2])
while true do
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000000 + tonumber(now[2]) - start > 450000 then return 1 end
end
`;

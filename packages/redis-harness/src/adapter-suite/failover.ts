import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisCluster, startCluster } from '../cluster.js';
import { type RedisDriver, tracked } from './driver.js';

/**
 * A cluster master fails over to a replica that has no scripts, or dies and is taken over:
 * the store finishes what it began, fails closed while the slots have no master, then works.
 */
export function failoverTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
  });
  afterAll(async () => {
    driver.disposeAll();
    await cluster?.dispose();
  });

  it('a claim made before a failover is completed on the promoted replica, which has no scripts', async () => {
    const store = driver.store(await driver.cluster(cluster.rootNodes), { timeoutMs: 2_000 });
    const key = `hookgate:evt:${crypto.randomUUID()}`;
    const token = crypto.randomUUID();
    expect(await store.claim(key, token, 60_000)).toBe('acquired');
    expect(await store.extend(key, token, 60_000)).toBe(true);
    const master = await cluster.masterFor(key);
    const promoted = await cluster.failover(master);
    await promoted.command('CONFIG', 'RESETSTAT');
    // The new master has no script cache: done goes EVALSHA -> NOSCRIPT -> EVAL, transparently.
    expect(await store.done(key, token, 60_000)).toBe(true);
    expect((await promoted.info('commandstats'))['cmdstat_eval']).toMatch(/^calls=1,/);
    expect(await promoted.command('GET', key)).toBe(`d:${token}`);
    expect(await store.claim(key, crypto.randomUUID(), 60_000)).toBe('done');
  });

  // Not every client finds the promoted replica on its own once a master is gone for good: a
  // driver that says so does not register this test (its docs say why), rather than skip it.
  (driver.recoversFromDeadMaster === false ? () => {} : it)(
    'when a master dies, operations on its slots fail closed until a replica takes over, then work again',
    async () => {
      const store = driver.store(await driver.cluster(cluster.rootNodes), { timeoutMs: 500 });
      const key = `hookgate:evt:${crypto.randomUUID()}`;
      expect(await store.claim(key, crypto.randomUUID(), 60_000)).toBe('acquired');
      const master = await cluster.masterFor(key);
      await master.kill();
      try {
        await expect(store.claim(key, crypto.randomUUID(), 60_000)).rejects.toMatchObject({
          name: 'StoreUnavailableError',
        });
        await cluster.failover(master, 'takeover');
        const fresh = `${key}:after`;
        let state: unknown;
        for (let i = 0; i < 50 && state === undefined; i++) {
          state = await store.claim(fresh, crypto.randomUUID(), 60_000).catch(() => undefined);
          if (state === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(state).toBe('acquired');
      } finally {
        await master.restart();
        await cluster.waitHealthy();
      }
    },
  );
}

import { type RedisCluster, startCluster } from '@hookgate/redis-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeRedisStore } from '../src/index.js';
import { destroyAll, majors } from './clients.js';

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startCluster({ masters: 3, replicas: 1 });
});
afterAll(async () => {
  destroyAll();
  await cluster?.dispose();
});

describe.each(Object.values(majors))('redis $major on a cluster that fails over', (major) => {
  it('a claim made before a failover is completed on the promoted replica, which has no scripts', async () => {
    const client = await major.cluster(cluster.rootNodes);
    const store = new NodeRedisStore(client, { timeoutMs: 2_000 });
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
});

describe('redis 6 when a cluster master dies', () => {
  it('operations on its slots fail closed until a replica takes over, then work again', async () => {
    const client = await majors[6].cluster(cluster.rootNodes);
    const store = new NodeRedisStore(client, { timeoutMs: 500 });
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
      let state: string | undefined;
      for (let i = 0; i < 50 && state === undefined; i++) {
        state = await store.claim(fresh, crypto.randomUUID(), 60_000).catch(() => undefined);
        if (state === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(state).toBe('acquired');
    } finally {
      await master.restart();
      await cluster.waitHealthy();
    }
  });
});

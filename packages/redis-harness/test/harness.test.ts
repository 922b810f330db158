import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keySlot,
  type RedisCluster,
  type RedisServer,
  rawCommand,
  startCluster,
  startRedis,
} from '../src/index.js';

describe('a standalone server', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis({ appendonly: true, appendfsync: 'always' });
  });
  afterAll(() => redis?.dispose());

  it('listens on its own loopback port and answers', async () => {
    expect(redis.port).not.toBe(6379);
    expect(await redis.command('PING')).toBe('PONG');
    expect(redis.state).toBe('running');
  });

  it('refuses to talk to the shared Redis on 6379', async () => {
    await expect(rawCommand(6379, ['PING'])).rejects.toThrow(/refusing/);
  });

  it('keeps AOF data across kill and restart on the same port', async () => {
    await redis.command('SET', 'persisted', 'yes');
    const { port } = redis;
    await redis.kill();
    expect(redis.state).toBe('stopped');
    await expect(rawCommand(port, ['PING'], 500)).rejects.toThrow();
    await redis.restart();
    expect(redis.port).toBe(port);
    expect(await redis.command('GET', 'persisted')).toBe('yes');
  });

  it('a paused server answers nothing until resumed', async () => {
    redis.pause();
    try {
      await expect(rawCommand(redis.port, ['PING'], 300)).rejects.toThrow(/timed out/);
    } finally {
      redis.resume();
    }
    expect(await redis.command('PING')).toBe('PONG');
  });
});

describe('a three-master cluster with replicas', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
  });
  afterAll(() => cluster?.dispose());

  it('serves every slot from three masters', async () => {
    expect(cluster.nodes).toHaveLength(6);
    expect(await cluster.masters()).toHaveLength(3);
    const info = String(await cluster.nodes[0]!.command('CLUSTER', 'INFO'));
    expect(info).toContain('cluster_state:ok');
  });

  it('keySlot computes the slot CLUSTER KEYSLOT answers, hash tags and UTF-8 included', async () => {
    const keys = [
      '',
      'a',
      'hookgate:evt:evt_1',
      '{user1000}.following',
      'foo{}{bar}',
      'foo{{bar}}zap',
      'foo{bar}{zap}',
      '{a',
      'a}{b}',
      'évènement:✓',
      ...Array.from({ length: 200 }, (_, i) => `key:${i}:${(i * 7919).toString(36)}`),
    ];
    const slots = [];
    for (const key of keys)
      slots.push(Number(await cluster.nodes[0]!.command('CLUSTER', 'KEYSLOT', key)));
    expect(keys.map(keySlot)).toEqual(slots);
    expect(new Set(slots).size).toBeGreaterThan(150);
  });

  it('fails a master over to its replica', async () => {
    const master = await cluster.masterFor('some-key');
    const promoted = await cluster.failover(master);
    expect(promoted.port).not.toBe(master.port);
    expect((await cluster.masterFor('some-key')).port).toBe(promoted.port);
    expect((await master.info('replication'))['role']).toBe('slave');
  });

  it('fails over a killed master by takeover', async () => {
    const master = await cluster.masterFor('other-key');
    await master.kill();
    const promoted = await cluster.failover(master);
    expect((await cluster.masterFor('other-key')).port).toBe(promoted.port);
    await master.restart();
    await cluster.waitHealthy();
  });
});

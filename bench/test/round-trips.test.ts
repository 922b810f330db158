/**
 * Round trips, counted with `MONITOR` (what each client sends, not the commands a script runs):
 * the cost model the benchmarks rest on, for both Redis adapters through `gate.run`, and for
 * the hand-written baseline they are compared with.
 */
import { randomUUID } from 'node:crypto';
import { createGate, type Gate } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { NodeRedisStore } from '@hookgate/node-redis';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { baselineNew, ioredisCommands, nodeRedisCommands, type RawCommands } from '../src/redis.js';
import { Monitor } from './monitor.js';

let server: RedisServer;
let monitor: Monitor;
const closers: (() => void)[] = [];

beforeAll(async () => {
  server = await startRedis();
  monitor = await Monitor.start(server);
});
afterAll(async () => {
  for (const close of closers) close();
  monitor?.close();
  await server?.dispose();
});

interface Adapter {
  name: string;
  connect(): Promise<{ store: IoRedisStore | NodeRedisStore; raw: RawCommands }>;
}

const adapters: Adapter[] = [
  {
    name: 'IoRedisStore (ioredis 6)',
    async connect() {
      const client = new Redis({ host: '127.0.0.1', port: server.port });
      closers.push(() => client.disconnect());
      await client.ping();
      return { store: new IoRedisStore(client), raw: ioredisCommands(client) };
    },
  },
  {
    name: 'NodeRedisStore (redis 6)',
    async connect() {
      const client = createClient({ socket: { host: '127.0.0.1', port: server.port } });
      client.on('error', () => {});
      closers.push(() => client.destroy());
      await client.connect();
      return { store: new NodeRedisStore(client), raw: nodeRedisCommands(client) };
    },
  },
];

describe.each(adapters)('$name', (adapter) => {
  let namespace: string;
  let gate: Gate;
  let sequenced: Gate;
  let raw: RawCommands;
  const sent = async () =>
    (await monitor.sent(server, namespace)).map((s) =>
      s.command === 'SET' ? `SET ${s.args.slice(2).join(' ').toUpperCase()}` : s.command,
    );

  beforeEach(async () => {
    const connected = await adapter.connect();
    namespace = `rt-${randomUUID().slice(0, 8)}`;
    raw = connected.raw;
    gate = createGate({ store: connected.store, namespace, eventId: 'id' });
    sequenced = createGate({
      store: connected.store,
      namespace,
      eventId: 'id',
      sequence: { subject: 'subject', occurredAt: 'at' },
    });
    // A script's first run on a server is EVALSHA, NOSCRIPT, then EVAL (once per server, and
    // after a restart or SCRIPT FLUSH: the adapters' own tests count that). Load them first.
    const warm = createGate({
      store: connected.store,
      namespace: `warm-${namespace}`,
      eventId: 'id',
      sequence: { subject: 'subject', occurredAt: 'at' },
    });
    await warm.run({ payload: { id: 'evt_0', subject: 'grant_0', at: 1 } }, () => 'ok');
    await sent(); // drop whatever connecting and warming sent
  });

  it('a new delivery costs two commands: the claim and the done', async () => {
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => 'ok');
    expect(outcome.status).toBe('processed');
    expect(await sent()).toEqual([expect.stringMatching(/^SET .*NX/), 'EVALSHA']);
  });

  it('a duplicate costs one command: the claim that finds the done record', async () => {
    await gate.run({ payload: { id: 'evt_1' } }, () => 'ok');
    await sent();
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => 'ok');
    expect(outcome.status).toBe('duplicate');
    expect(await sent()).toEqual([expect.stringMatching(/^SET .*NX/)]);
  });

  it('a delivery in flight elsewhere costs one command', async () => {
    const first = await gate.claim({ payload: { id: 'evt_1' } });
    await sent();
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => 'ok');
    expect(outcome.status).toBe('in-flight');
    expect(await sent()).toEqual([expect.stringMatching(/^SET .*NX/)]);
    await first.release();
  });

  it('a sequenced delivery costs four when applied (claim, advance, done, releaseHold), three when stale', async () => {
    const newer = { payload: { id: 'evt_2', subject: 'grant_1', at: 2_000 } };
    const older = { payload: { id: 'evt_1', subject: 'grant_1', at: 1_000 } };
    expect((await sequenced.run(newer, () => 'ok')).status).toBe('processed');
    expect(await sent()).toEqual([
      expect.stringMatching(/^SET .*NX/),
      'EVALSHA',
      'EVALSHA',
      'EVALSHA',
    ]);
    expect((await sequenced.run(older, () => 'ok')).status).toBe('stale');
    expect(await sent()).toEqual([expect.stringMatching(/^SET .*NX/), 'EVALSHA', 'EVALSHA']);
  });

  it("the benchmarks' baseline is the two plain SETs it claims to be", async () => {
    // The ratios in docs/benchmarks.md compare gate.run with this.
    await baselineNew(raw, `x-${namespace}`);
    // baselineNew writes under the default namespace; count its commands by their key.
    const commands = (await monitor.sent(server, `hookgate:evt:x-${namespace}`)).map((s) =>
      [s.command, ...s.args.slice(2).map((a) => a.toUpperCase())].join(' '),
    );
    expect(commands).toEqual([
      expect.stringMatching(/^SET PX \d+ NX$/),
      expect.stringMatching(/^SET PX \d+$/),
    ]);
  });
});

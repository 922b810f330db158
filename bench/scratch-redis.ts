import { randomUUID } from 'node:crypto';
import { createGate } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { scripts } from '../packages/ioredis/src/scripts/index.js';
import { alternate, asyncSide } from './src/measure.js';
import { baselineNew, ioredisCommands, nextId } from './src/redis.js';

const server = await startRedis();
const io = new Redis({ port: server.port, host: '127.0.0.1' });
await io.ping();
const store = new IoRedisStore(io);
const gate = createGate({ store, eventId: 'id' });
const raw = ioredisCommands(io);
const c = Number(process.argv[2] ?? 1);
await io.script('LOAD', scripts.done.lua);
const res = await alternate(
  [
    asyncSide(() => baselineNew(raw, nextId()), c),
    asyncSide(() => gate.run({ payload: { id: nextId() } }, () => 1), c),
    asyncSide(async () => {
      const k = 'hookgate:evt:' + nextId();
      const t = randomUUID();
      await store.claim(k, t, 300000);
      await store.done(k, t, 86400000);
    }, c),
    asyncSide(async () => {
      const k = 'hookgate:evt:' + nextId();
      const t = randomUUID();
      await io.set(k, 'p:' + t, 'PX', 300000, 'NX', 'GET');
      await io.evalsha(scripts.done.sha, 1, k, t, 86400000);
    }, c),
  ],
  { rounds: 4, roundMs: 1000, warmupMs: 300 },
);
for (const [n, s] of ['baseline', 'gate', 'store', 'raw set+evalsha'].map(
  (n, i) => [n, res[i]!] as const,
))
  console.log(n.padEnd(16), Math.round(s.opsPerSec), s.p50.toFixed(3), s.p99.toFixed(3));
io.disconnect();
await server.dispose();

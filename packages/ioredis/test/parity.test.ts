/**
 * The Lua scripts (and RedisStore's reading of a claim's `SET … GET`) decide as MemoryStore
 * does, over raw values planted under the key: every encoding hookgate writes, and odd or
 * foreign ones (an empty token, a value with a newline, a prefix of a record). For each value,
 * operation and arguments: the answer (or the error's reason) and the value left.
 */
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import * as ioredis6 from 'ioredis6';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { IoRedisStore } from '../src/index.js';

let server: RedisServer;
let client: ioredis6.Redis;
beforeAll(async () => {
  server = await startRedis();
  client = new ioredis6.Redis({ host: '127.0.0.1', port: server.port });
  client.on('error', () => {});
  await client.ping();
});
afterAll(async () => {
  client?.disconnect();
  await server?.dispose();
});

const FP = 'a'.repeat(64);
const FP2 = 'b'.repeat(64);
const RAW = [
  '',
  'p:',
  'd:',
  'p:tok',
  'p:tok:',
  `p:tok:${FP}`,
  `p:tok:${FP2}`,
  'p:other',
  'd:tok',
  `d:tok:${FP}`,
  'd:other',
  '123',
  '0',
  '-1',
  'tok',
  'p::x',
  'd::x',
  'p:a b',
  'p:tok\n',
  'x',
  'x:tok',
  '5',
  '5:',
  '5:k',
  '5:evt:x',
  '-5:k',
  '+5:k',
  '05:k',
  '1e3:k',
  '5.5:k',
  '5:k\nz',
  'h:1:tok:5:k',
  'h:1:other:5:k',
  'h:99999999999999:tok:5:k',
  'h:99999999999999:other:5:k',
  'h:99999999999999:other:5:evt:x',
  'h::tok:5:k',
  'h:1::5:k',
  'h:1:tok:5:',
  'h:1:tok:x:k',
  'h:1:tok:5:k\nz',
  'p:tok:\n',
];

type Op = { label: string; run: (store: RedisOrMemory, key: string) => Promise<unknown> };
type RedisOrMemory = IoRedisStore | MemoryStore;
const tokens = ['tok', 'other', '123'];
const ops: Op[] = [];
for (const t of tokens) {
  for (const fp of [undefined, FP, FP2]) {
    ops.push({ label: `claim(${t},${fp?.[0]})`, run: (s, k) => s.claim(k, t, 60_000, fp) });
    ops.push({ label: `done(${t},${fp?.[0]})`, run: (s, k) => s.done(k, t, 60_000, fp) });
  }
  ops.push({ label: `release(${t})`, run: (s, k) => s.release(k, t) });
  ops.push({ label: `extend(${t})`, run: (s, k) => s.extend(k, t, 60_000) });
  ops.push({ label: `releaseHold(${t})`, run: (s, k) => s.releaseHold(k, t) });
  ops.push({ label: `extendHold(${t})`, run: (s, k) => s.extendHold(k, t, 60_000) });
  for (const at of [4, 5, 6, -5])
    for (const eventKey of ['k', 'evt:x'])
      for (const ties of ['drop', 'apply'] as const)
        ops.push({
          label: `advance(${t},${at},${eventKey},${ties})`,
          run: (s, k) =>
            s.advance(k, { at, eventKey, token: t, holdMs: 30_000, ttlMs: 60_000, ties }),
        });
}
ops.push({
  label: 'inspect',
  run: (s, k) => s.inspect(k).then((record) => ({ ...record, ttlMs: undefined })),
});
ops.push({ label: 'forget', run: (s, k) => s.forget(k) });

/**
 * A MemoryStore whose record under `key` holds `raw`: MemoryStore has no way to write a value of
 * its own choosing, so its entry is captured as a claim inserts it (its `Map`'s `set`, patched
 * for that one call), then rewritten.
 */
async function memoryWith(key: string, raw: string) {
  const store = new MemoryStore();
  let entry: { value: string; expiresAt: number } | undefined;
  const set = Map.prototype.set;
  Map.prototype.set = function (this: Map<unknown, unknown>, k: unknown, v: unknown) {
    if (k === key) entry = v as typeof entry;
    return set.call(this, k, v);
  } as typeof Map.prototype.set;
  try {
    await store.claim(key, 'seed', 600_000);
  } finally {
    Map.prototype.set = set;
  }
  entry!.value = raw;
  return { store, value: () => (entry!.expiresAt === -1 ? null : entry!.value) };
}

function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    (v) => JSON.stringify(v),
    (e: { code?: string; reason?: string; message?: string }) => `ERR ${e.code}/${e.reason ?? ''}`,
  );
}

it('every operation answers as MemoryStore does, and leaves the same value, on every planted value', async () => {
  const store = new IoRedisStore(client, { timeoutMs: 5_000 });
  const diffs: string[] = [];
  let n = 0;
  for (const raw of RAW) {
    for (const op of ops) {
      const key = `parity:${n++}`;
      await client.set(key, raw, 'PX', 600_000);
      const redisResult = await outcome(op.run(store, key));
      const redisAfter = await client.get(key);
      const memory = await memoryWith(key, raw);
      const memoryResult = await outcome(op.run(memory.store, key));
      let memoryAfter = memory.value();
      // The memory store may have dropped and re-created the entry (absent-key paths).
      if (memoryAfter === null) {
        const r = await memory.store.inspect(key).catch(() => undefined);
        if (r && r.kind !== 'absent') memoryAfter = '(recreated)';
      }
      const norm = (v: string | null) => (v === null ? null : v.replace(/^h:\d{13,}:/, 'h:<now>:'));
      if (
        redisResult !== memoryResult ||
        (norm(redisAfter) !== norm(memoryAfter) && memoryAfter !== '(recreated)')
      ) {
        diffs.push(
          `${JSON.stringify(raw)} ${op.label}: redis ${redisResult} -> ${JSON.stringify(redisAfter)} | memory ${memoryResult} -> ${JSON.stringify(memoryAfter)}`,
        );
      }
    }
  }
  expect(diffs).toEqual([]);
}, 120_000);

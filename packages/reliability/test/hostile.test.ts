/**
 * Hostile and malformed deliveries through the real Express binding over IoRedisStore, with
 * the sequence guard on (the grant-portal setup). Each gets a clear answer (400 with a reason,
 * or 200 where it is legitimately an event), the body echoes neither the input nor a stack
 * trace, and a refused delivery leaves no key in Redis and no run in PostgreSQL.
 *
 * The core's own tables (packages/core/test/hostile.test.ts, properties.test.ts) cover the
 * same inputs at the gate; this is what a client on the wire sees.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IoRedisStore } from '@hookgate/ioredis';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../src/ledger.js';
import { createReceiver, sign } from '../src/receiver.js';

const secret = randomUUID();
const namespace = `rel-hostile-${randomUUID().slice(0, 8)}`;
const AT = '2024-05-01T10:00:00Z';

let redis: RedisServer;
let client: Redis;
let ledger: Ledger;
let pool: pg.Pool;
let server: Server;
let url: string;

beforeAll(async () => {
  [redis, ledger] = await Promise.all([startRedis(), Ledger.open('hostile')]);
  client = new Redis(redis.url);
  pool = new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 2 });
  const { app } = createReceiver({
    store: new IoRedisStore(client, { timeoutMs: 1_000 }),
    db: pool,
    table: ledger.table,
    worker: 'in-process',
    namespace,
    secret,
    claimTtlMs: 30_000,
    sequence: true,
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  client?.disconnect();
  await pool?.end();
  await Promise.all([redis?.dispose(), ledger?.close()]);
});

/** Every key under the namespace, by SCAN. */
async function keys(): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${namespace}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found.sort();
}

async function runCount(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${ledger.table}`);
  return Number(rows[0]!.n);
}

async function post(
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-signature': sign(secret, body), ...headers },
    body,
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, text: await res.text() };
}

/** A small JSON answer of the binding's own vocabulary: no input echoed, no stack trace. */
function expectCleanAnswer(text: string, input: string | Uint8Array): void {
  expect(text.length).toBeLessThan(100);
  expect(text).not.toMatch(/Error|\bat\s+\S+\s*\(|node:|\.ts:\d+|<html|<pre/i);
  const json = JSON.parse(text) as Record<string, unknown>;
  for (const [name, value] of Object.entries(json)) {
    expect(['status', 'reason']).toContain(name);
    expect(value).toMatch(/^[a-z-]{2,20}$/);
  }
  // Nothing of the input comes back: no 8-character run of the body appears in the answer.
  const source = typeof input === 'string' ? input : Buffer.from(input).toString('latin1');
  for (let i = 0; i + 8 <= Math.min(source.length, 4_096); i++) {
    const run = source.slice(i, i + 8);
    if (!/^[{}":,\s\d]+$/.test(run)) expect(text).not.toContain(run);
  }
}

const event = (fields: Record<string, unknown>) =>
  JSON.stringify({ grant_id: `g-${randomUUID()}`, occurred_at: AT, ...fields });
const raw = (text: string) => text.replace('$GRANT', `g-${randomUUID()}`).replace('$AT', AT);
const deep = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

type Case = [name: string, reason: string, body: () => string | Uint8Array];

const refused: Case[] = [
  ['an object id', 'missing-id', () => event({ id: { $gt: '' } })],
  ['a float id', 'missing-id', () => event({ id: 1.5 })],
  [
    'a NaN id (not JSON)',
    'not-json',
    () => raw('{"id":NaN,"grant_id":"$GRANT","occurred_at":"$AT"}'),
  ],
  ['a boolean id', 'missing-id', () => event({ id: true })],
  ['a blank id', 'missing-id', () => event({ id: ' \t\n ' })],
  [
    'an integer id beyond 2^53',
    'missing-id',
    () => raw('{"id":9007199254740993,"grant_id":"$GRANT","occurred_at":"$AT"}'),
  ],
  [
    'an id hidden in __proto__',
    'missing-id',
    () => raw('{"__proto__":{"id":"sneaky"},"grant_id":"$GRANT","occurred_at":"$AT"}'),
  ],
  ['a payload nested 100,000 levels deep, without an id', 'missing-id', () => deep(100_000)],
  [
    'invalid UTF-8',
    'not-json',
    () => new Uint8Array([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]),
  ],
  ['an empty body', 'not-json', () => ''],
  ['a truncated body', 'not-json', () => '{"id":"trunc-1","grant_id":'],
  ['a JSON array', 'missing-id', () => '[{"id":"in-array"}]'],
  ['JSON null', 'missing-id', () => 'null'],
  [
    'a garbage timestamp',
    'bad-timestamp',
    () => event({ id: 'ts-garbage', occurred_at: 'next tuesday' }),
  ],
  [
    'a negative timestamp',
    'bad-timestamp',
    () => event({ id: 'ts-negative', occurred_at: -1_700_000_000 }),
  ],
  [
    'a far-future timestamp',
    'bad-timestamp',
    () => event({ id: 'ts-future', occurred_at: '2999-01-01T00:00:00Z' }),
  ],
  [
    'an object timestamp',
    'bad-timestamp',
    () => event({ id: 'ts-object', occurred_at: { seconds: 1 } }),
  ],
  ['no timestamp', 'bad-timestamp', () => JSON.stringify({ id: 'ts-none', grant_id: 'g-none' })],
  ['no subject', 'missing-subject', () => JSON.stringify({ id: 'nosubj-1', occurred_at: AT })],
];

describe('hostile deliveries over HTTP', () => {
  it.each(refused)(
    '%s is refused: 400 %s, leaving no key and no run',
    async (_name, reason, make) => {
      const body = make();
      const [keysBefore, runsBefore] = [await keys(), await runCount()];
      const answer = await post(body);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual({ status: 'invalid', reason });
      expectCleanAnswer(answer.text, body);
      expect(await keys()).toEqual(keysBefore);
      expect(await runCount()).toBe(runsBefore);
    },
  );

  const accepted: [name: string, body: () => string, key: RegExp | string][] = [
    [
      'an id with control characters',
      () => event({ id: 'evt\u0000\r\n\u001b[31mHOSTILE' }),
      /^evt:#[0-9a-f]{64}$/,
    ],
    ['a 100 KB id', () => event({ id: 'X'.repeat(100_000) }), /^evt:#[0-9a-f]{64}$/],
    ['a safe integer id', () => event({ id: 4_294_967_297 }), 'evt:4294967297'],
    [
      'duplicate JSON keys (the last one wins, as JSON.parse reads it)',
      () => raw('{"id":"dup-first","id":"dup-last","grant_id":"$GRANT","occurred_at":"$AT"}'),
      'evt:dup-last',
    ],
    [
      '__proto__ and constructor members',
      () =>
        raw(
          '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"id":"proto-1","grant_id":"$GRANT","occurred_at":"$AT"}',
        ),
      'evt:proto-1',
    ],
    [
      'a payload nested 100,000 levels deep, with an id',
      () => raw(`{"id":"deep-1","grant_id":"$GRANT","occurred_at":"$AT","x":${deep(100_000)}}`),
      'evt:deep-1',
    ],
    [
      'unix seconds as the timestamp',
      () => event({ id: 'ts-seconds', occurred_at: 1_714_557_600 }),
      'evt:ts-seconds',
    ],
  ];

  it.each(accepted)(
    '%s is an event: processed once, stored under a bounded key, then a duplicate',
    async (_name, make, expected) => {
      const body = make();
      const [keysBefore, runsBefore] = [await keys(), await runCount()];
      const first = await post(body);
      expect(first.status).toBe(200);
      expect(JSON.parse(first.text)).toEqual({ status: 'processed' });
      expectCleanAnswer(first.text, body);
      const added = (await keys()).filter((k) => !keysBefore.includes(k));
      // The claim key and the subject's watermark; both short, printable and hashed if odd.
      expect(added).toHaveLength(2);
      for (const key of added) {
        expect(key.length).toBeLessThan(200);
        expect(key).toMatch(/^[\x21-\x7e]+$/);
      }
      const claim = added.find((k) => !k.startsWith(`${namespace}:seq:`))!;
      expect(claim.slice(namespace.length + 1)).toMatch(expected);
      expect(await runCount()).toBe(runsBefore + 1);
      const again = await post(body);
      expect(again.status).toBe(200);
      expect(JSON.parse(again.text)).toEqual({ status: 'duplicate' });
      expect(await runCount()).toBe(runsBefore + 1);
      expect(Object.prototype).not.toHaveProperty('polluted');
    },
  );

  it.each<[string, number, string, () => { body: string; headers: Record<string, string> }]>([
    [
      'a bad signature',
      401,
      'unauthorized',
      () => ({ body: event({ id: 'unsigned' }), headers: { 'x-signature': '0'.repeat(64) } }),
    ],
    [
      'a signature that is not hex',
      401,
      'unauthorized',
      () => ({ body: event({ id: 'odd-sig' }), headers: { 'x-signature': '<script>' } }),
    ],
    [
      'a body over the 1 MiB limit',
      413,
      'too-large',
      () => ({ body: event({ id: 'big', pad: 'P'.repeat(1_100_000) }), headers: {} }),
    ],
  ])('%s is answered %i %s and changes nothing', async (_name, status, word, make) => {
    const { body, headers } = make();
    const [keysBefore, runsBefore] = [await keys(), await runCount()];
    const answer = await post(body, headers).catch(() => ({ status: 0, text: '' }));
    expect(answer.status).toBe(status);
    expect(JSON.parse(answer.text)).toEqual({ status: word });
    expectCleanAnswer(answer.text, body);
    expect(await keys()).toEqual(keysBefore);
    expect(await runCount()).toBe(runsBefore);
  });

  it('an 8 KB X-Event-Id header is hashed into the key: processed once, then a duplicate', async () => {
    const body = JSON.stringify({ grant_id: `g-${randomUUID()}`, occurred_at: AT });
    const headers = { 'x-event-id': 'H'.repeat(8_000) };
    const [keysBefore, runsBefore] = [await keys(), await runCount()];
    const answer = await post(body, headers);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ status: 'processed' });
    const added = (await keys()).filter((k) => !keysBefore.includes(k));
    expect(added.some((k) => /:evt:#[0-9a-f]{64}$/.test(k))).toBe(true);
    for (const key of added) {
      expect(key.length).toBeLessThan(200);
      expect(key).toMatch(/^[\x21-\x7e]+$/);
    }
    expect(await runCount()).toBe(runsBefore + 1);
    const again = await post(body, headers);
    expect(JSON.parse(again.text)).toEqual({ status: 'duplicate' });
    expect(await runCount()).toBe(runsBefore + 1);
  });
});

import { createGate, StoreUnavailableError } from '@hookgate/core';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IoRedisStore } from '../src/index.js';
import { redis } from './clients.js';

// What errors.md and troubleshooting.md say of a value another application wrote under the
// namespace, on a real Redis: one hookgate cannot read is refused and left as it is; one that
// reads as a hookgate record is taken for that record.
let server: RedisServer;
let client: ReturnType<typeof redis>;
beforeAll(async () => {
  server = await startRedis();
  client = redis(6, server.port);
});
afterAll(async () => {
  client?.disconnect();
  await server?.dispose();
});

const run = async (value: string) => {
  const gate = createGate({ store: new IoRedisStore(client), eventId: 'id' });
  const id = crypto.randomUUID();
  await server.command('SET', `hookgate:evt:${id}`, value);
  let ran = false;
  const outcome = await gate
    .run({ payload: { id } }, () => {
      ran = true;
    })
    .catch((error: unknown) => error);
  return { outcome, ran, left: await server.command('GET', `hookgate:evt:${id}`) };
};

it('a value hookgate cannot read is refused (foreign-value) and left as it is', async () => {
  const { outcome, ran, left } = await run('hello');
  expect(outcome).toBeInstanceOf(StoreUnavailableError);
  expect(outcome).toMatchObject({ reason: 'foreign-value' });
  expect(ran).toBe(false);
  expect(left).toBe('hello');
});

it('an all-digit value reads as a done record: the event is a duplicate', async () => {
  const { outcome, ran, left } = await run('42');
  expect(outcome).toMatchObject({ status: 'duplicate' });
  expect(ran).toBe(false);
  expect(left).toBe('42');
});

it('p:<anything> reads as a claim in flight', async () => {
  const { outcome, ran } = await run('p:someone-else');
  expect(outcome).toMatchObject({ status: 'in-flight' });
  expect(ran).toBe(false);
});

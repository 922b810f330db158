import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { createGate, type Delivery, InvalidDeliveryError, providers } from '../src/index.js';

/** A gate on a fresh store, with the sequence guard, as the grant-portal guide sets it up. */
function sequenced(digestFallback = true) {
  const store = new MemoryStore();
  const gate = createGate({
    store,
    provider: providers.grantPortal,
    sequence: true,
    digestFallback,
  });
  return { gate, store };
}

const good = { grant_id: 'g1', occurred_at: '2024-05-01T10:00:00Z' };

describe('hostile and malformed deliveries', () => {
  it.each([
    ['an id with control characters', { ...good, id: 'evt\u0000\r\n\u001b[31m' }],
    ['a 100 KB id', { ...good, id: 'x'.repeat(100_000) }],
    ['an id with spaces and unicode', { ...good, id: 'ëvt 1 🎉' }],
  ])('%s is hashed into the key, never stored raw', async (_name, payload) => {
    const { gate } = sequenced();
    const outcome = await gate.run({ payload }, () => 1);
    expect(outcome.status).toBe('processed');
    expect(outcome.key).toMatch(/^evt:#[0-9a-f]{64}$/);
    expect((await gate.run({ payload }, () => 1)).status).toBe('duplicate');
  });

  it.each([
    ['an object id', { a: 1 }],
    ['a float id', 1.5],
    ['a NaN id', Number.NaN],
    ['a boolean id', true],
    ['an integer id beyond 2^53', 2 ** 53 + 2],
    ['a blank id', ' \t '],
  ])('%s is not an id: missing-id without the digest fallback', async (_name, id) => {
    const { gate, store } = sequenced(false);
    const error = await gate.run({ payload: { ...good, id } }, () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidDeliveryError);
    expect(error).toMatchObject({ reason: 'missing-id' });
    expect(store.size).toBe(0);
  });

  it('an integer id beyond 2^53 in the raw body is not rounded into another event’s id', async () => {
    const { gate } = sequenced(false);
    const rawBody = '{"id":9007199254740993,"grant_id":"g","occurred_at":1700000000}';
    const error = await gate.run({ rawBody }, () => 1).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'InvalidDeliveryError', reason: 'missing-id' });
  });

  it('__proto__ and constructor members pollute nothing and key like any member', async () => {
    const { gate } = createGateWithDigest();
    const rawBody =
      '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"x":1}';
    const outcome = await gate.run({ rawBody }, (event) => event.payload);
    expect(outcome.status).toBe('processed');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    const other = await gate.run(
      { rawBody: '{"constructor":{"prototype":{"polluted":"yes"}},"x":1}' },
      () => 1,
    );
    expect(other.key).not.toBe(outcome.key);
  });

  it('a payload nested 100,000 levels deep is refused as not-json, without a stack overflow', async () => {
    const { gate, store } = createGateWithDigest();
    const rawBody = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const error = await gate.run({ rawBody }, () => 1).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'InvalidDeliveryError', reason: 'not-json' });
    expect(store.size).toBe(0);
  });

  it('a deeply nested payload with an event id needs no digest and is processed', async () => {
    const { gate } = sequenced();
    const rawBody = `{"id":"deep","grant_id":"g","occurred_at":1700000000,"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect((await gate.run({ rawBody }, () => 1)).status).toBe('processed');
  });

  it('duplicate JSON members key by the member JSON.parse keeps (the last)', async () => {
    const { gate } = createGateWithDigest();
    const a = await gate.run({ rawBody: '{"x":1,"x":2}' }, () => 1);
    const b = await gate.run({ rawBody: '{"x":2}' }, () => 1);
    expect(b).toEqual({ status: 'duplicate', key: a.key });
  });

  it.each<[string, Delivery]>([
    ['invalid UTF-8', { rawBody: new Uint8Array([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x7d]) }],
    ['an empty body', { rawBody: '' }],
    ['a truncated body', { rawBody: '{"id":"e1","grant_id":' }],
    ['a UTF-16 body', { rawBody: new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]) }],
  ])('%s is refused as not-json and changes nothing', async (_name, delivery) => {
    const { gate, store } = sequenced();
    const error = await gate.run(delivery, () => 1).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'InvalidDeliveryError', reason: 'not-json' });
    expect(store.size).toBe(0);
  });

  it.each([
    ['garbage', 'next tuesday'],
    ['negative', -1_700_000_000],
    ['far in the future', '2999-01-01T00:00:00Z'],
    ['NaN as text', 'NaN'],
    ['an object', { seconds: 1 }],
  ])(
    'a %s timestamp is a bad-timestamp with the guard on, and changes no watermark',
    async (_n, at) => {
      const { gate, store } = sequenced();
      const error = await gate
        .run({ payload: { id: 'e1', grant_id: 'g1', occurred_at: at } }, () => 1)
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'InvalidDeliveryError', reason: 'bad-timestamp' });
      expect(store.size).toBe(0);
      // The subject's watermark was not poisoned: a normal event still applies.
      expect((await gate.run({ payload: { id: 'e2', ...good } }, () => 1)).status).toBe(
        'processed',
      );
    },
  );

  it('an error message never echoes a huge hostile body', async () => {
    const { gate } = sequenced();
    const error = (await gate
      .run({ rawBody: `{"id":"${'A'.repeat(1_000_000)}` }, () => 1)
      .catch((e: unknown) => e)) as Error;
    expect(error.message.length).toBeLessThan(500);
  });
});

function createGateWithDigest() {
  const store = new MemoryStore();
  return { gate: createGate({ store }), store };
}

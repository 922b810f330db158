import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, deriveKey, InvalidDeliveryError, providers } from '../src/index.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('deriveKey', () => {
  it('uses the provider event id from a payload path', () => {
    expect(deriveKey({ payload: { id: 'evt_123' } }, { eventId: 'id' })).toEqual({
      key: 'evt:evt_123',
      source: 'event-id',
    });
    expect(deriveKey({ payload: { data: { id: 42 } } }, { eventId: 'data.id' })).toEqual({
      key: 'evt:42',
      source: 'event-id',
    });
  });

  it('reads header ids case-insensitively from Node and Fetch headers', () => {
    const options = { eventId: { header: 'X-Event-Id' } };
    expect(deriveKey({ payload: {}, headers: { 'x-event-id': 'a1' } }, options).key).toBe('evt:a1');
    expect(deriveKey({ payload: {}, headers: { 'X-EVENT-ID': 'a2' } }, options).key).toBe('evt:a2');
    expect(deriveKey({ payload: {}, headers: { 'x-event-id': ['a3', 'b'] } }, options).key).toBe(
      'evt:a3',
    );
    expect(
      deriveKey({ payload: {}, headers: new Headers({ 'X-Event-Id': 'a4' }) }, options).key,
    ).toBe('evt:a4');
  });

  it('tries an array of selectors in order', () => {
    const options = { eventId: ['id', { header: 'X-Event-Id' }] as const };
    expect(deriveKey({ payload: { id: 'p' }, headers: { 'x-event-id': 'h' } }, options).key).toBe(
      'evt:p',
    );
    expect(deriveKey({ payload: {}, headers: { 'x-event-id': 'h' } }, options).key).toBe('evt:h');
  });

  it('trims ids and accepts only non-blank strings and safe integers', () => {
    const key = (id: unknown) => deriveKey({ payload: { id } }, { eventId: 'id' });
    expect(key('  evt_1 \n').key).toBe('evt:evt_1');
    expect(key(7).key).toBe('evt:7');
    for (const notAnId of ['   ', '', 1.5, 2 ** 53, true, null, { a: 1 }, ['x']]) {
      expect(key(notAnId).source).toBe('digest');
    }
  });

  it('hashes long or odd ids instead of storing them raw', () => {
    const key = (id: string) => deriveKey({ payload: { id } }, { eventId: 'id' }).key;
    expect(key('a'.repeat(128))).toBe(`evt:${'a'.repeat(128)}`);
    expect(key('a'.repeat(129))).toBe(`evt:#${sha256('a'.repeat(129))}`);
    expect(key('x'.repeat(100_000))).toMatch(/^evt:#[0-9a-f]{64}$/);
    expect(key('bad\u0000id')).toBe(`evt:#${sha256('bad\u0000id')}`);
    expect(key('with space')).toBe(`evt:#${sha256('with space')}`);
    expect(key('#abc')).not.toBe('evt:#abc');
  });

  it('gives ids that differ only in lone surrogates keys of their own (UTF-8 would make each U+FFFD)', () => {
    const key = (id: string) => deriveKey({ payload: { id } }, { eventId: 'id' }).key;
    const ids = ['evt_\ud800', 'evt_\udfff', 'evt_\ufffd', 'evt_\ud800\ud800', 'evt_\udc00\ud800'];
    const keys = ids.map(key);
    expect(new Set(keys).size).toBe(ids.length);
    for (const k of keys) expect(k).toMatch(/^evt:#[0-9a-f]{64}$/);
    // A well-formed id keeps the hash of its UTF-8 bytes, a pair of surrogates included.
    expect(key('evt_\ufffd')).toBe(`evt:#${sha256('evt_\ufffd')}`);
    expect(key('evt_\ud83d\ude00')).toBe(`evt:#${sha256('evt_\u{1f600}')}`);
    // And no well-formed id, its JSON escape of the lone one included, takes a lone one's key.
    expect(key(JSON.stringify('evt_\ud800'))).not.toBe(key('evt_\ud800'));
    // The same on parsed JSON text, as a binding reads it.
    const fromText = (text: string) =>
      deriveKey({ rawBody: new TextEncoder().encode(text) }, { eventId: 'id' }).key;
    expect(fromText('{"id":"evt_\\ud800"}')).toBe(key('evt_\ud800'));
    expect(fromText('{"id":"evt_\\ud800"}')).not.toBe(fromText('{"id":"evt_\\udfff"}'));
  });

  it('falls back to the SHA-256 of the canonical JSON, equal for re-serialized redeliveries', () => {
    const first = deriveKey({ rawBody: '{"b":2,"a":[1.0,"x"]}' });
    const again = deriveKey({ rawBody: new TextEncoder().encode('{ "a": [1, "x"], "b": 2 }') });
    expect(first).toEqual({
      key: `dig:${sha256(canonicalJson({ a: [1, 'x'], b: 2 }))}`,
      source: 'digest',
    });
    expect(again).toEqual(first);
    expect(deriveKey({ payload: { a: [1, 'y'], b: 2 } }).key).not.toBe(first.key);
  });

  it('refuses a delivery without an id when the digest fallback is off', () => {
    const error = catchError(() =>
      deriveKey({ payload: { x: 1 } }, { eventId: 'id', digestFallback: false }),
    );
    expect(error).toBeInstanceOf(InvalidDeliveryError);
    expect(error).toMatchObject({ code: 'INVALID_DELIVERY', reason: 'missing-id' });
  });

  it.each([
    ['malformed JSON', { rawBody: '{"a":' }],
    ['an empty body', { rawBody: '' }],
    ['invalid UTF-8', { rawBody: new Uint8Array([0x7b, 0xff, 0x7d]) }],
    ['neither payload nor body', {}],
    ['a payload JSON cannot hold', { payload: { n: 10n } }],
    ['a lone surrogate', { rawBody: '{"a":"\\ud800"}' }],
  ])('refuses %s as not-json', (_name, delivery) => {
    expect(catchError(() => deriveKey(delivery))).toMatchObject({
      name: 'InvalidDeliveryError',
      reason: 'not-json',
    });
  });

  it('never reads through the prototype chain', () => {
    const key = deriveKey({ payload: JSON.parse('{"a":1}') }, { eventId: 'constructor' });
    expect(key.source).toBe('digest');
    expect(
      deriveKey({ payload: {}, headers: {} }, { eventId: { header: 'constructor' } }).source,
    ).toBe('digest');
  });

  it('takes the event id location from a provider preset', () => {
    const headers = { 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' };
    expect(
      deriveKey({ payload: { action: 'opened' }, headers }, { provider: providers.github }),
    ).toEqual({
      key: 'evt:72d3162e-cc78-11e3-81ab-4c9367dc0958',
      source: 'event-id',
    });
  });

  it('turns a throwing selector function into an InvalidDeliveryError', () => {
    const eventId = () => {
      throw new Error('boom');
    };
    expect(catchError(() => deriveKey({ payload: {} }, { eventId }))).toMatchObject({
      reason: 'missing-id',
    });
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('function selectors', () => {
  it('see the parsed payload when only the raw body was given', () => {
    const eventId = (delivery: { payload?: unknown }) => (delivery.payload as { ref?: string }).ref;
    expect(deriveKey({ rawBody: '{"ref":"r-1"}' }, { eventId }).key).toBe('evt:r-1');
  });
});

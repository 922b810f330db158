import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  admit,
  bindingOptions,
  createError,
  createGate,
  type Gate,
  InvalidDeliveryError,
  settleFromResponse,
} from '../src/index.js';

const body = (json: unknown) => new TextEncoder().encode(JSON.stringify(json));

function setup(verify: ((raw: Uint8Array) => boolean) | false = false) {
  const store = new MemoryStore();
  const gate = createGate({ store, eventId: 'id' });
  return { store, gate, options: bindingOptions('test', { gate, verify }) };
}

describe('admit and settleFromResponse, the part every binding shares', () => {
  it('answers the table: 401, 400, 200 duplicate, 409 in flight, 503', async () => {
    const refused = setup(() => false);
    expect((await admit(refused.options, body({ id: 'a' }), {})).answer).toEqual({
      status: 401,
      body: { status: 'unauthorized' },
      headers: {},
    });
    expect(refused.store.size).toBe(0);

    const { gate, store, options } = setup();
    expect((await admit(options, new TextEncoder().encode('{'), {})).answer).toMatchObject({
      status: 400,
      body: { status: 'invalid', reason: 'not-json' },
    });
    const first = await admit(options, body({ id: 'a' }), {});
    expect(first.claim?.acquired).toBe(true);
    expect((await admit(options, body({ id: 'a' }), {})).answer).toEqual({
      status: 409,
      body: { status: 'in-flight' },
      headers: { 'Retry-After': '10' },
    });
    await settleFromResponse(first.claim!, 204);
    expect((await admit(options, body({ id: 'a' }), {})).answer).toMatchObject({
      status: 200,
      body: { status: 'duplicate' },
    });

    store.claim = () => Promise.reject(new Error('down'));
    expect((await admit(options, body({ id: 'b' }), {})).answer).toMatchObject({ status: 503 });
    expect(gate.namespace).toBe('hookgate');
  });

  it("acknowledges in-flight deliveries with inFlight: 'ack'", async () => {
    const { gate } = setup();
    const options = bindingOptions('test', { gate, verify: false, inFlight: 'ack' });
    await admit(options, body({ id: 'a' }), {});
    expect((await admit(options, body({ id: 'a' }), {})).answer).toMatchObject({
      status: 200,
      body: { status: 'in-flight' },
    });
  });

  it('answers a gate whose claim throws (a wrapper) as one whose claim rejects', async () => {
    const throwing = (error: Error) =>
      bindingOptions('test', {
        gate: {
          batched: false,
          claim: () => {
            throw error;
          },
        } as unknown as Gate,
        verify: false,
      });
    const invalid = new InvalidDeliveryError('missing-id', 'no id');
    await expect(admit(throwing(invalid), body({}), {})).resolves.toMatchObject({
      answer: { status: 400, body: { status: 'invalid', reason: 'missing-id' } },
    });
    const down = createError('test', 'STORE_UNAVAILABLE', 'down');
    await expect(admit(throwing(down), body({}), {})).resolves.toMatchObject({
      answer: { status: 503, headers: { 'Retry-After': '10' } },
    });
    // The same in a body of many events (a gate that splits bodies).
    const batched = bindingOptions('test', {
      gate: {
        batched: true,
        split: () => [{ payload: { id: 'a' } }, { payload: { id: 'b' } }],
        claim: () => {
          throw invalid;
        },
      } as unknown as Gate,
      verify: false,
    });
    await expect(admit(batched, body([]), {})).resolves.toMatchObject({
      answer: { status: 400, body: { status: 'invalid', reason: 'missing-id' } },
    });
    // Anything else is not an answer: a rejection, never a synchronous throw.
    let admitting: Promise<unknown> | undefined;
    expect(() => {
      admitting = admit(throwing(new TypeError('a bug')), body({}), {});
    }).not.toThrow();
    await expect(admitting).rejects.toBeInstanceOf(TypeError);
  });

  it('releases on a non-2xx answer, so the retry runs', async () => {
    const { options } = setup();
    const { claim } = await admit(options, body({ id: 'a' }), {});
    await settleFromResponse(claim!, 500);
    expect((await admit(options, body({ id: 'a' }), {})).claim?.acquired).toBe(true);
  });

  it('tries a done that met a store failure once more, since the provider has its 2xx', async () => {
    const { store, options } = setup();
    const realDone = store.done.bind(store);
    let failures = 1;
    store.done = (...args) =>
      failures-- > 0 ? Promise.reject(new Error('blip')) : realDone(...args);
    const { claim } = await admit(options, body({ id: 'a' }), {});
    await settleFromResponse(claim!, 200);
    expect((await admit(options, body({ id: 'a' }), {})).answer?.body.status).toBe('duplicate');
  });

  it('refuses bad options when the middleware is built, naming them', () => {
    const { gate } = setup();
    expect(() => bindingOptions('hookgate/x', { gate } as never)).toThrow(/`verify` is required/);
    expect(() => bindingOptions('hookgate/x', { gate, verify: false, limit: 0 })).toThrow(
      /`limit`/,
    );
    expect(() => bindingOptions('hookgate/x', { verify: false } as never)).toThrow(/`gate`/);
  });
});

describe('a body of many events under the sequence guard', () => {
  const event = (id: string, subject: string, at: number) => ({ id, subject, at });
  function sequenced(store = new MemoryStore()) {
    const gate = createGate({
      store,
      eventId: 'id',
      split: (payload) => payload as unknown[],
      sequence: { subject: 'subject', occurredAt: 'at' },
    });
    return { store, gate, options: bindingOptions('test', { gate, verify: false }) };
  }

  it('a repeated event that is stale does not hold up the body', async () => {
    const { options } = sequenced();
    const first = await admit(options, body([event('n', 's', 1_700_000_005)]), {});
    await first.claim!.done();
    const admitted = await admit(
      options,
      body([event('o', 's', 1_700_000_001), event('o', 's', 1_700_000_001), event('x', 't', 1)]),
      {},
    );
    expect(admitted.answer).toBeUndefined();
    expect(admitted.claim!.event.events!.map((e) => e.key)).toEqual(['evt:x']);
  });

  it('a holder whose claim another owner took while the body was admitted: 409, not a throw', async () => {
    const store = new MemoryStore();
    // The holder's release finds another owner's record: its claim was taken meanwhile.
    const realRelease = store.release.bind(store);
    store.release = (key, token) =>
      key.endsWith(':evt:h') ? Promise.resolve(false) : realRelease(key, token);
    const { options } = sequenced(store);
    const admitted = await admit(
      options,
      body([event('h', 's', 1_700_000_001), event('n', 's', 1_700_000_002)]),
      {},
    );
    expect(admitted.answer).toMatchObject({ status: 409, body: { status: 'in-flight' } });
  });
});

describe('a body of many events with fingerprints', () => {
  it('an event repeated with two payloads, one of them in flight elsewhere: 409, not acknowledged', async () => {
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      fingerprint: true,
      split: (payload) => payload as unknown[],
    });
    const options = bindingOptions('test', { gate, verify: false });
    // Another worker holds x with the second payload.
    const elsewhere = await gate.claim({ payload: { id: 'x', v: 2 } });
    expect(elsewhere.acquired).toBe(true);
    const admitted = await admit(
      options,
      body([{ id: 'x', v: 1 }, { id: 'x', v: 2 }, { id: 'q' }]),
      {},
    );
    expect(admitted.answer).toMatchObject({ status: 409, body: { status: 'in-flight' } });
  });
});

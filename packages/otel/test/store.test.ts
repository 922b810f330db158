import { alreadyDone, type ClaimStore, createGate, ErrorCode, providers } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { ProxyTracerProvider, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { instrument, instrumentGate, instrumentStore } from '../src/index.js';
import { attributeSets, count, telemetry } from './telemetry.js';

describe('instrumentStore', () => {
  it('times inspect and forget, which gate.inspect and gate.forget call', async () => {
    const t = telemetry();
    const gate = createGate({
      store: instrumentStore(new MemoryStore(), t),
      namespace: 'ops',
      eventId: 'id',
    });
    await gate.run({ payload: { id: 'evt_1' } }, () => 'ok');
    expect((await gate.inspect('evt:evt_1')).state).toBe('done');
    expect(await gate.forget('evt:evt_1')).toBe(true);
    const ok = (operation: string) => ({
      'hookgate.store.operation': operation,
      'hookgate.store.outcome': 'ok',
      'hookgate.namespace': 'ops',
    });
    expect(await attributeSets(t, 'hookgate.store.operation.duration')).toEqual(
      ['claim', 'done', 'forget', 'inspect'].map(ok),
    );
    expect(await count(t, 'hookgate.store.operation.duration', ok('inspect'))).toBe(1);
    // No span was active: store calls start no trace of their own.
    expect(t.spans()).toEqual([]);
  });

  it('times the sequence guard: advance and releaseHold', async () => {
    const t = telemetry();
    const gate = createGate({
      store: instrumentStore(new MemoryStore(), t),
      namespace: 'seq',
      provider: providers.stripe,
      sequence: true,
    });
    const payload = {
      id: 'evt_1',
      created: 1_700_000_000,
      data: { object: { id: 'in_1', customer: 'cus_1' } },
    };
    expect((await gate.run({ payload }, () => 'ok')).status).toBe('processed');
    const operations = (await attributeSets(t, 'hookgate.store.operation.duration')).map(
      (a) => (a as Record<string, string>)['hookgate.store.operation'],
    );
    expect(operations).toEqual(['advance', 'claim', 'done', 'releaseHold']);
  });

  it('has no inspect or forget when the store has none, so the gate still says so', async () => {
    const {
      inspect: _i,
      forget: _f,
      ...old
    } = Object.getOwnPropertyDescriptors(MemoryStore.prototype);
    const memory = new MemoryStore();
    const legacy = {} as ClaimStore;
    for (const name of Object.keys(old)) {
      if (name === 'constructor' || typeof old[name]?.value !== 'function') continue;
      (legacy as unknown as Record<string, unknown>)[name] = old[name].value.bind(memory);
    }
    const wrapped = instrumentStore(legacy, telemetry());
    expect(wrapped.inspect).toBeUndefined();
    expect(wrapped.forget).toBeUndefined();
    const gate = createGate({ store: wrapped, eventId: 'id' });
    await expect(gate.inspect('evt:x')).rejects.toMatchObject({ code: ErrorCode.INVALID_OPTIONS });
  });

  it('refuses what is not a ClaimStore, naming the missing method', () => {
    expect(() => instrumentStore({} as ClaimStore)).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTIONS,
        message: expect.stringContaining('no claim()'),
      }),
    );
  });

  it('passes a synchronous throw on as a rejection, timed as an error', async () => {
    const t = telemetry();
    const broken = instrumentStore(
      Object.assign(Object.create(new MemoryStore()) as ClaimStore, {
        claim: () => {
          throw new Error('socket closed');
        },
      }),
      t,
    );
    await expect(broken.claim('ns:evt:1', 'token', 1000)).rejects.toThrow('socket closed');
    expect(await attributeSets(t, 'hookgate.store.operation.duration')).toEqual([
      {
        'hookgate.store.operation': 'claim',
        'hookgate.store.outcome': 'error',
        'hookgate.namespace': 'ns',
      },
    ]);
  });
});

describe('instrumentGate', () => {
  it('gives each delivery of runBatch its own run span, in order', async () => {
    const t = telemetry();
    const gate = instrumentGate(createGate({ store: new MemoryStore(), eventId: 'id' }), t);
    const results = await gate.runBatch(
      [{ payload: { id: 'a' } }, { payload: { id: 'a' } }, { payload: { id: 'b' } }],
      () => 'ok',
      { concurrency: 1 },
    );
    expect(results.map((r) => r.status)).toEqual(['processed', 'duplicate', 'processed']);
    expect(t.named('hookgate.run').map((s) => s.attributes['hookgate.outcome'])).toEqual([
      'processed',
      'duplicate',
      'processed',
    ]);
    await expect(gate.runBatch([], () => 'ok', { concurrency: 0 })).rejects.toMatchObject({
      code: ErrorCode.INVALID_OPTIONS,
    });
  });

  it('without the decision hook, takes the decision from what run did', async () => {
    const t = telemetry();
    const gate = instrumentGate(
      createGate({ store: new MemoryStore(), eventId: 'id', digestFallback: false }),
      t,
    );
    await gate.run({ payload: { id: 'x' } }, () => 'ok');
    await expect(gate.run({ payload: {} }, () => 'ok')).rejects.toThrow();
    const [processed, invalid] = t.named('hookgate.run');
    expect(processed!.attributes).toEqual({
      'hookgate.namespace': 'hookgate',
      'hookgate.key': 'evt:x',
      'hookgate.source': 'event-id',
      'hookgate.decision': 'new',
      'hookgate.outcome': 'processed',
    });
    expect(invalid!.attributes).toEqual({
      'hookgate.namespace': 'hookgate',
      'hookgate.decision': 'invalid',
      'hookgate.outcome': 'error',
    });
    expect(invalid!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('picks up a tracer provider registered after the gate was built', async () => {
    const t = telemetry();
    const proxy = new ProxyTracerProvider();
    const gate = instrumentGate(createGate({ store: new MemoryStore(), eventId: 'id' }), {
      tracerProvider: proxy,
    });
    await gate.run({ payload: { id: 'before' } }, () => 'ok');
    expect(t.spans()).toEqual([]);
    proxy.setDelegate(t.tracerProvider);
    await gate.run({ payload: { id: 'after' } }, () => 'ok');
    expect(t.named('hookgate.run').map((s) => s.attributes['hookgate.key'])).toEqual(['evt:after']);
  });

  it('takes alreadyDone() as an answer: a duplicate, timed, the handler span not in error', async () => {
    const t = telemetry();
    const gate = instrumentGate(
      createGate(instrument({ store: new MemoryStore(), namespace: 'ledger', eventId: 'id' }, t)),
      t,
    );
    const outcome = await gate.run({ payload: { id: 'l' } }, () => {
      throw alreadyDone();
    });
    expect(outcome.status).toBe('duplicate');
    const timed = {
      'hookgate.decision': 'duplicate',
      'hookgate.namespace': 'ledger',
      'hookgate.source': 'event-id',
    };
    expect(await count(t, 'hookgate.handler.duration', timed)).toBe(1);
    const [handler] = t.named('hookgate.handler');
    expect(handler!.status.code).toBe(SpanStatusCode.UNSET);
    const [run] = t.named('hookgate.run');
    expect(run!.attributes).toMatchObject({
      'hookgate.decision': 'new',
      'hookgate.outcome': 'duplicate',
    });
  });

  it("leaves claim to the gate: a binding's store calls nest under its server span", async () => {
    const t = telemetry();
    const gate = instrumentGate(
      createGate(instrument({ store: new MemoryStore(), eventId: 'id' }, t)),
      t,
    );
    await t.tracerProvider.getTracer('app').startActiveSpan('POST /webhooks', async (span) => {
      const claim = await gate.claim({ payload: { id: 'b' } });
      await claim.done();
      span.end();
    });
    const server = t.named('POST /webhooks')[0]!;
    expect(t.named('hookgate.run')).toEqual([]);
    for (const name of ['hookgate.store.claim', 'hookgate.store.done']) {
      expect(t.named(name).map((s) => s.parentSpanContext?.spanId)).toEqual([
        server.spanContext().spanId,
      ]);
    }
  });

  it('delegates claim, split, inspect, forget and its fields to the gate', async () => {
    const inner = createGate({ store: new MemoryStore(), namespace: 'inner', eventId: 'id' });
    const gate = instrumentGate(inner, telemetry());
    expect(gate.namespace).toBe('inner');
    expect(gate.batched).toBe(false);
    expect(gate.split({ payload: { id: 1 } })).toEqual([{ payload: { id: 1 } }]);
    const claim = await gate.claim({ payload: { id: 'c' } });
    expect(claim.status).toBe('acquired');
    await claim.done();
    expect((await inner.inspect('evt:c')).state).toBe('done');
    expect(await gate.forget('evt:c')).toBe(true);
    expect((await gate.inspect('evt:c')).state).toBe('absent');
  });
});

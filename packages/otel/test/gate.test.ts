import { createServer } from 'node:net';
import {
  admit,
  bindingOptions,
  type ClaimStore,
  createGate,
  type DecisionEvent,
  type GateOptions,
  providers,
  StoreUnavailableError,
} from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { MemoryStore } from '@hookgate/memory';
import {
  createNoopMeter,
  DiagLogLevel,
  diag,
  type MeterProvider,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { instrument, instrumentGate } from '../src/index.js';
import { attributeSets, count, type Telemetry, telemetry } from './telemetry.js';

/** This run's namespaces on the shared Redis; its records expire within a minute. */
const RUN = `otel-${process.pid}-${Date.now().toString(36)}`;
const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
afterAll(() => {
  redis.disconnect();
});

let serial = 0;
const nextId = () => `evt_${(serial++).toString(36)}`;

const stores: Array<[string, () => ClaimStore]> = [
  ['MemoryStore', () => new MemoryStore()],
  ['Redis (ioredis)', () => new IoRedisStore(redis)],
];

/** A gate over `store`, instrumented both ways, with the test's own providers. */
function gateOf(t: Telemetry, store: ClaimStore, options: Partial<GateOptions> = {}) {
  const namespace = `${RUN}.${serial++}`;
  const gate = instrumentGate(
    createGate(
      instrument(
        { store, namespace, provider: providers.stripe, doneTtlMs: 60_000, ...options },
        t,
      ),
    ),
    t,
  );
  return { gate, namespace };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const only = (spans: ReadableSpan[]) => {
  expect(spans).toHaveLength(1);
  return spans[0]!;
};

describe.each(stores)('over %s', (_label, makeStore) => {
  it('a new event is counted new then done, and its run span says key, source, decision and outcome', async () => {
    const t = telemetry();
    const { gate, namespace } = gateOf(t, makeStore());
    const id = nextId();
    const outcome = await gate.run({ payload: { id, type: 'invoice.paid' } }, () => 'ok');
    expect(outcome).toEqual({ status: 'processed', key: `evt:${id}`, result: 'ok' });

    const base = { 'hookgate.namespace': namespace, 'hookgate.provider': 'stripe' };
    const counted = { ...base, 'hookgate.source': 'event-id' };
    expect(await attributeSets(t, 'hookgate.decisions')).toEqual([
      { ...counted, 'hookgate.decision': 'done' },
      { ...counted, 'hookgate.decision': 'new' },
    ]);
    expect(await count(t, 'hookgate.decisions', { ...counted, 'hookgate.decision': 'new' })).toBe(
      1,
    );
    expect(await count(t, 'hookgate.decisions', { ...counted, 'hookgate.decision': 'done' })).toBe(
      1,
    );
    expect(
      await count(t, 'hookgate.handler.duration', { ...counted, 'hookgate.decision': 'done' }),
    ).toBe(1);
    const store = (operation: string) => ({
      'hookgate.store.operation': operation,
      'hookgate.store.outcome': 'ok',
      'hookgate.namespace': namespace,
    });
    expect(await attributeSets(t, 'hookgate.store.operation.duration')).toEqual([
      store('claim'),
      store('done'),
    ]);

    const run = only(t.named('hookgate.run'));
    expect(run.attributes).toEqual({
      ...base,
      'hookgate.key': `evt:${id}`,
      'hookgate.source': 'event-id',
      'hookgate.decision': 'new',
      'hookgate.outcome': 'processed',
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    expect(run.events.map((e) => e.attributes?.['hookgate.decision'])).toEqual(['new', 'done']);
    const handler = only(t.named('hookgate.handler'));
    expect(parentOf(handler)).toBe(idOf(run));
    expect(handler.attributes).toEqual({ 'hookgate.key': `evt:${id}` });
    for (const name of ['hookgate.store.claim', 'hookgate.store.done']) {
      const span = only(t.named(name));
      expect(parentOf(span)).toBe(idOf(run));
      expect(span.attributes).toEqual({
        'hookgate.store.operation': name.slice('hookgate.store.'.length),
        'hookgate.namespace': namespace,
      });
    }
  });

  it('a redelivery is counted duplicate, and its run span has no handler span', async () => {
    const t = telemetry();
    const { gate, namespace } = gateOf(t, makeStore());
    const delivery = { payload: { id: nextId() } };
    await gate.run(delivery, () => 'ok');
    const handler = () => expect.unreachable('a duplicate never runs the handler');
    expect((await gate.run(delivery, handler)).status).toBe('duplicate');

    const counted = {
      'hookgate.namespace': namespace,
      'hookgate.provider': 'stripe',
      'hookgate.source': 'event-id',
    };
    expect(
      await count(t, 'hookgate.decisions', { ...counted, 'hookgate.decision': 'duplicate' }),
    ).toBe(1);
    expect(await count(t, 'hookgate.decisions', { ...counted, 'hookgate.decision': 'new' })).toBe(
      1,
    );
    const [first, second] = t.named('hookgate.run');
    expect(first!.attributes['hookgate.outcome']).toBe('processed');
    expect(second!.attributes['hookgate.decision']).toBe('duplicate');
    expect(second!.attributes['hookgate.outcome']).toBe('duplicate');
    expect(t.named('hookgate.handler')).toHaveLength(1);
  });

  it('a failing handler is released, and both its spans end in error', async () => {
    const t = telemetry();
    const { gate, namespace } = gateOf(t, makeStore());
    const failure = new Error('payment service down');
    const delivery = { payload: { id: nextId() } };
    await expect(
      gate.run(delivery, () => {
        throw failure;
      }),
    ).rejects.toBe(failure);

    const counted = {
      'hookgate.namespace': namespace,
      'hookgate.provider': 'stripe',
      'hookgate.source': 'event-id',
    };
    expect(
      await count(t, 'hookgate.decisions', { ...counted, 'hookgate.decision': 'released' }),
    ).toBe(1);
    expect(
      await count(t, 'hookgate.handler.duration', { ...counted, 'hookgate.decision': 'released' }),
    ).toBe(1);
    const run = only(t.named('hookgate.run'));
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: 'payment service down' });
    expect(run.attributes['hookgate.decision']).toBe('new');
    expect(run.attributes['hookgate.outcome']).toBe('error');
    expect(run.events.map((e) => e.name)).toEqual([
      'hookgate.decision',
      'hookgate.decision',
      'exception',
    ]);
    expect(run.events[1]!.attributes).toEqual({ 'hookgate.decision': 'released' });
    const handler = only(t.named('hookgate.handler'));
    expect(handler.status.code).toBe(SpanStatusCode.ERROR);
    expect(only(t.named('hookgate.store.release')).status.code).toBe(SpanStatusCode.UNSET);
    // Released: the redelivery runs the handler again.
    expect((await gate.run(delivery, () => 'ok')).status).toBe('processed');
  });

  it("spans the handler starts nest under the handler's span", async () => {
    const t = telemetry();
    const { gate } = gateOf(t, makeStore());
    const mine = t.tracerProvider.getTracer('app');
    await gate.run({ payload: { id: nextId() } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      mine.startActiveSpan('charge customer', (span) => span.end());
    });
    const handler = only(t.named('hookgate.handler'));
    expect(parentOf(only(t.named('charge customer')))).toBe(idOf(handler));
  });

  it("a run under a span of the caller's is its child", async () => {
    const t = telemetry();
    const { gate } = gateOf(t, makeStore());
    const server = t.tracerProvider.getTracer('app');
    await server.startActiveSpan('POST /webhooks', async (span) => {
      await gate.run({ payload: { id: nextId() } }, () => 'ok');
      span.end();
    });
    expect(parentOf(only(t.named('hookgate.run')))).toBe(idOf(only(t.named('POST /webhooks'))));
  });
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a done retried in the background after the run ended', () => {
  it('is counted, and notes nothing on the ended run span (no SDK warning)', async () => {
    const warnings: string[] = [];
    diag.setLogger(
      {
        error: (message) => warnings.push(message),
        warn: (message) => warnings.push(message),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      DiagLogLevel.WARN,
    );
    try {
      const t = telemetry();
      const store = new MemoryStore();
      const realDone = store.done.bind(store);
      let failures = 2; // both inline attempts; the background one lands
      store.done = (...args) =>
        failures-- > 0 ? Promise.reject(new Error('ECONNRESET')) : realDone(...args);
      const { gate, namespace } = gateOf(t, store);
      expect((await gate.run({ payload: { id: nextId() } }, () => 'ok')).status).toBe('processed');
      const run = only(t.named('hookgate.run'));
      // The background retry lands: counted done.
      await vi.waitFor(async () =>
        expect(
          await count(t, 'hookgate.decisions', {
            'hookgate.decision': 'done',
            'hookgate.namespace': namespace,
            'hookgate.provider': 'stripe',
            'hookgate.source': 'event-id',
          }),
        ).toBe(1),
      );
      expect(warnings.filter((w) => /ended Span/i.test(w))).toEqual([]);
      expect(run.events.map((event) => event.attributes?.['hookgate.decision'])).toEqual([
        'new',
        'store-unavailable',
      ]);
    } finally {
      diag.disable();
    }
  });
});

describe('a store that is down', () => {
  it('is recorded: store-unavailable counted, the claim timed as an error, the run span in error', async () => {
    const down = new Redis({
      host: '127.0.0.1',
      port: await closedPort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    try {
      const t = telemetry();
      const { gate, namespace } = gateOf(t, new IoRedisStore(down, { timeoutMs: 500 }));
      const id = nextId();
      const handler = () => expect.unreachable('the handler never runs without a claim');
      await expect(gate.run({ payload: { id } }, handler)).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );

      expect(
        await count(t, 'hookgate.decisions', {
          'hookgate.decision': 'store-unavailable',
          'hookgate.namespace': namespace,
          'hookgate.provider': 'stripe',
          'hookgate.source': 'event-id',
        }),
      ).toBe(1);
      expect(await attributeSets(t, 'hookgate.store.operation.duration')).toEqual([
        {
          'hookgate.store.operation': 'claim',
          'hookgate.store.outcome': 'error',
          'hookgate.namespace': namespace,
        },
      ]);
      const run = only(t.named('hookgate.run'));
      expect(run.status.code).toBe(SpanStatusCode.ERROR);
      expect(run.attributes).toMatchObject({
        'hookgate.key': `evt:${id}`,
        'hookgate.decision': 'store-unavailable',
        'hookgate.outcome': 'error',
      });
      const claim = only(t.named('hookgate.store.claim'));
      expect(claim.status.code).toBe(SpanStatusCode.ERROR);
      expect(claim.events.map((e) => e.name)).toEqual(['exception']);
    } finally {
      down.disconnect();
    }
  });
});

describe('instrumentGate and the bindings', () => {
  it("a binding given the wrapped gate still reports its own decisions (401, 413) to the gate's hook", async () => {
    const seen: string[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      onDecision: (event) => seen.push(event.decision),
    });
    const wrapped = instrumentGate(gate, telemetry());
    const options = bindingOptions('test', { gate: wrapped, verify: () => false });
    expect((await admit(options, 'too-large', {})).answer?.status).toBe(413);
    const body = new TextEncoder().encode('{"id":"e1"}');
    expect((await admit(options, body, {})).answer?.status).toBe(401);
    expect(seen).toEqual(['too-large', 'unverified']);
  });
});

describe('instrument', () => {
  it("leaves out what a decision does not know, and still calls the gate's own hook", async () => {
    const t = telemetry();
    const seen: DecisionEvent[] = [];
    const gate = createGate(
      instrument(
        {
          store: new MemoryStore(),
          namespace: 'plain',
          eventId: 'id',
          onDecision: (event) => seen.push(event),
        },
        t,
      ),
    );
    await gate.run({ payload: { id: nextId() } }, () => 'ok');
    await gate.run({ payload: { no: 'id' } }, () => 'ok');
    expect(seen.map((e) => e.decision)).toEqual(['new', 'done', 'new', 'done']);
    expect(await attributeSets(t, 'hookgate.decisions')).toEqual([
      { 'hookgate.decision': 'done', 'hookgate.namespace': 'plain', 'hookgate.source': 'digest' },
      { 'hookgate.decision': 'done', 'hookgate.namespace': 'plain', 'hookgate.source': 'event-id' },
      { 'hookgate.decision': 'new', 'hookgate.namespace': 'plain', 'hookgate.source': 'digest' },
      { 'hookgate.decision': 'new', 'hookgate.namespace': 'plain', 'hookgate.source': 'event-id' },
    ]);
  });

  it('names its instruments with the units the docs give', async () => {
    const t = telemetry();
    const gate = createGate(instrument({ store: new MemoryStore(), eventId: 'id' }, t));
    await gate.run({ payload: { id: nextId() } }, () => 'ok');
    expect((await t.descriptor('hookgate.decisions'))?.unit).toBe('{decision}');
    expect((await t.descriptor('hookgate.handler.duration'))?.unit).toBe('s');
    expect((await t.descriptor('hookgate.store.operation.duration'))?.unit).toBe('s');
  });

  it('a tracer provider registered after instrument() gets run spans without the decision events and provider', async () => {
    const base = () => ({
      store: new MemoryStore(),
      namespace: `${RUN}.${serial++}`,
      provider: providers.stripe,
    });
    const options = instrument(base());
    expect(options.onDecision).toBeUndefined(); // no SDK yet: no hook
    const t = telemetry();
    trace.setGlobalTracerProvider(t.tracerProvider); // registered late, as the docs warn
    try {
      const gate = instrumentGate(createGate(options));
      const payload = { id: nextId(), type: 'invoice.paid', created: 1 };
      expect((await gate.run({ payload }, () => 'ok')).status).toBe('processed');
      const run = only(t.named('hookgate.run'));
      expect(run.attributes['hookgate.decision']).toBe('new'); // from what run returned
      expect(run.attributes['hookgate.provider']).toBeUndefined();
      expect(run.events).toEqual([]);
      // instrument() called once the SDK is there: every decision noted.
      const later = instrumentGate(createGate(instrument(base())));
      await later.run({ payload: { ...payload, id: nextId() } }, () => 'ok');
      const second = t.named('hookgate.run')[1]!;
      expect(second.attributes['hookgate.provider']).toBe('stripe');
      expect(second.events.map((event) => event.attributes?.['hookgate.decision'])).toEqual([
        'new',
        'done',
      ]);
    } finally {
      trace.disable();
    }
  });

  it('with no SDK registered, keeps the gate as it was: its own hook, no span', async () => {
    const own = () => {};
    const options = instrument({ store: new MemoryStore(), eventId: 'id', onDecision: own });
    expect(options.onDecision).toBe(own);
    const gate = instrumentGate(createGate(options));
    let active: unknown = 'unset';
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => {
      active = trace.getActiveSpan();
      return 1;
    });
    expect(outcome).toEqual({ status: 'processed', key: 'evt:evt_1', result: 1 });
    expect(active).toBeUndefined();
  });
});

describe("the caller's onDecision", () => {
  it('is called for every decision even when recording one throws (a faulty meter)', async () => {
    const noop = createNoopMeter();
    const throwing = () => ({
      add: () => {
        throw new Error('exporter bug');
      },
      record: () => {
        throw new Error('exporter bug');
      },
    });
    const meter = { ...noop, createCounter: throwing, createHistogram: throwing };
    const meterProvider = { getMeter: () => meter } as unknown as MeterProvider;
    const seen: string[] = [];
    const options = instrument(
      { store: new MemoryStore(), eventId: 'id', onDecision: (event) => seen.push(event.decision) },
      { meterProvider },
    );
    const gate = instrumentGate(createGate(options));
    expect((await gate.run({ payload: { id: 'o1' } }, () => 1)).status).toBe('processed');
    expect((await gate.run({ payload: { id: 'o1' } }, () => 1)).status).toBe('duplicate');
    expect(seen).toEqual(['new', 'done', 'duplicate']);
  });
});

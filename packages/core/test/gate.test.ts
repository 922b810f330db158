import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { resolveGateOptions } from '../src/gate-options.js';
import {
  type ClaimStore,
  createGate,
  type DecisionEvent,
  type Delivery,
  type GateOptions,
  HookgateError,
  InvalidDeliveryError,
  LeaseLostError,
  providers,
  StoreUnavailableError,
} from '../src/index.js';

/** A store on a clock the test moves by hand. */
function manualStore() {
  let now = 1_700_000_000_000;
  const store = new MemoryStore({ now: () => now });
  return { store, advance: (ms: number) => (now += ms) };
}

function gateWith(options: Partial<GateOptions> = {}) {
  const decisions: DecisionEvent[] = [];
  const { store, advance } = manualStore();
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (event) => decisions.push(event),
    ...options,
  });
  return { gate, store, advance, decisions };
}

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('the four verification checks', () => {
  it('a redelivery of a done event is acknowledged without running the handler', async () => {
    const { gate } = gateWith();
    let runs = 0;
    const delivery = { payload: { id: 'evt_1', amount: 10 } };
    const first = await gate.run(delivery, () => ++runs);
    const second = await gate.run(delivery, () => ++runs);
    expect(first).toEqual({ status: 'processed', key: 'evt:evt_1', result: 1 });
    expect(second).toEqual({ status: 'duplicate', key: 'evt:evt_1' });
    expect(runs).toBe(1);
  });

  it('a delivery without an id still dedupes through the digest of its canonical JSON', async () => {
    const { gate } = gateWith();
    let runs = 0;
    const first = await gate.run({ rawBody: '{"grant":"g1","amount":5}' }, () => ++runs);
    const second = await gate.run({ rawBody: '{ "amount": 5.0, "grant": "g1" }' }, () => ++runs);
    expect(first.status).toBe('processed');
    expect(first.key).toMatch(/^dig:[0-9a-f]{64}$/);
    expect(second).toEqual({ status: 'duplicate', key: first.key });
    expect(runs).toBe(1);
  });

  it('two events with different ids about the same subject are both processed', async () => {
    const { gate } = gateWith({ subject: 'grant_id' });
    const seen: unknown[] = [];
    await gate.run({ payload: { id: 'e1', grant_id: 'g1' } }, (e) => seen.push(e.subject));
    await gate.run({ payload: { id: 'e2', grant_id: 'g1' } }, (e) => seen.push(e.subject));
    expect(seen).toEqual(['g1', 'g1']);
  });

  it('an older event for a subject after a newer one is dropped as stale', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const applied: string[] = [];
    const newer = { payload: { id: 'e2', grant_id: 'g1', occurred_at: '2024-05-01T10:00:05Z' } };
    const older = { payload: { id: 'e1', grant_id: 'g1', occurred_at: '2024-05-01T10:00:00Z' } };
    expect((await gate.run(newer, (e) => applied.push(e.key))).status).toBe('processed');
    expect(await gate.run(older, (e) => applied.push(e.key))).toEqual({
      status: 'stale',
      key: 'evt:e1',
    });
    expect(applied).toEqual(['evt:e2']);
    // The stale event is settled: its redelivery is a plain duplicate.
    expect((await gate.run(older, () => applied.push('again'))).status).toBe('duplicate');
  });
});

describe('claims', () => {
  it('1,000 concurrent runs of one delivery run the handler once', async () => {
    const { gate } = gateWith();
    let runs = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 1000 }, () =>
        gate.run({ payload: { id: 'evt_storm' } }, async () => {
          runs++;
          await later(20);
        }),
      ),
    );
    expect(runs).toBe(1);
    const statuses = outcomes.map((o) => o.status);
    expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'in-flight')).toHaveLength(999);
  });

  it('reports in-flight while another worker holds the claim, duplicate once it is done', async () => {
    const { gate } = gateWith();
    const gateOpen = deferred();
    const delivery = { payload: { id: 'evt_slow' } };
    const first = gate.run(delivery, () => gateOpen.promise);
    await later(1);
    expect(await gate.run(delivery, () => 'never')).toEqual({
      status: 'in-flight',
      key: 'evt:evt_slow',
    });
    gateOpen.resolve();
    expect((await first).status).toBe('processed');
    expect((await gate.run(delivery, () => 'never')).status).toBe('duplicate');
  });

  it("a crashed worker's claim expires after claimTtlMs and the next delivery processes it", async () => {
    const { gate, advance } = gateWith({ claimTtlMs: 1000 });
    const delivery = { payload: { id: 'evt_crash' } };
    const crashed = await gate.claim(delivery); // the worker dies here: never settles
    expect(crashed.acquired).toBe(true);
    advance(999);
    expect((await gate.run(delivery, () => 'x')).status).toBe('in-flight');
    advance(2);
    expect(await gate.run(delivery, () => 'redone')).toEqual({
      status: 'processed',
      key: 'evt:evt_crash',
      result: 'redone',
    });
  });

  it('a handler slower than claimTtlMs loses its lease; its done reports it and overwrites nothing', async () => {
    const { gate, advance, decisions } = gateWith({ claimTtlMs: 1000 });
    const delivery = { payload: { id: 'evt_lease' } };
    const slow = deferred();
    const runs: string[] = [];
    const first = gate.run(delivery, async () => {
      runs.push('first');
      await slow.promise;
    });
    await later(1);
    advance(1001);
    expect((await gate.run(delivery, () => runs.push('second'))).status).toBe('processed');
    slow.resolve();
    const error = await first.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({
      code: 'LEASE_LOST',
      operation: 'done',
      key: 'hookgate:evt:evt_lease',
    });
    expect(runs).toEqual(['first', 'second']);
    // The second worker's done record survived the first worker's late done.
    expect((await gate.run(delivery, () => runs.push('third'))).status).toBe('duplicate');
    expect(decisions.filter((d) => d.decision === 'lease-lost')).toHaveLength(1);
  });

  it('releases the claim when the handler fails, so the retry redoes the work', async () => {
    const { gate, decisions } = gateWith();
    const delivery = { payload: { id: 'evt_fail' } };
    const boom = new Error('database down');
    await expect(gate.run(delivery, () => Promise.reject(boom))).rejects.toBe(boom);
    expect(await gate.run(delivery, () => 'ok')).toEqual({
      status: 'processed',
      key: 'evt:evt_fail',
      result: 'ok',
    });
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'released', 'new', 'done']);
    expect(decisions[1]).toMatchObject({ error: boom });
  });

  it("onFailure 'retain' keeps the record, so redeliveries are duplicates", async () => {
    const { gate, decisions } = gateWith({ onFailure: 'retain' });
    const delivery = { payload: { id: 'evt_retain' } };
    await expect(
      gate.run(delivery, () => Promise.reject(new Error('queued for own retry'))),
    ).rejects.toThrow('queued for own retry');
    expect(await gate.run(delivery, () => 'never')).toEqual({
      status: 'duplicate',
      key: 'evt:evt_retain',
    });
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'retained', 'duplicate']);
  });

  it('keeps a long handler’s claim alive with the heartbeat', async () => {
    const store = new MemoryStore();
    const gate = createGate({
      store,
      eventId: 'id',
      claimTtlMs: 120,
      heartbeat: { intervalMs: 30 },
    });
    const delivery = { payload: { id: 'evt_long' } };
    const long = gate.run(delivery, () => later(400));
    await later(300);
    expect((await gate.run(delivery, () => 'never')).status).toBe('in-flight');
    expect((await long).status).toBe('processed');
  });

  it('a heartbeat that finds the claim gone takes it back when nobody else holds it', async () => {
    const store = new MemoryStore();
    const decisions: string[] = [];
    const gate = createGate({
      store,
      eventId: 'id',
      claimTtlMs: 1000,
      heartbeat: { intervalMs: 20 },
      onDecision: (d) => decisions.push(d.decision),
    });
    const delivery = { payload: { id: 'evt_gone' } };
    const outcome = gate.run(delivery, async () => {
      store.clear(); // the claim vanishes (a failover, an operator's DEL)
      await later(100);
      // The heartbeat claimed it again with its own token: a redelivery is in flight.
      return (await gate.run(delivery, () => 'second')).status;
    });
    expect(await outcome).toMatchObject({ status: 'processed', result: 'in-flight' });
    expect(decisions).toEqual(['new', 'in-flight', 'done']);
  });

  it('a heartbeat that finds another owner reports it once, and run rejects with LeaseLostError', async () => {
    const store = new MemoryStore();
    const decisions: string[] = [];
    const gate = createGate({
      store,
      eventId: 'id',
      claimTtlMs: 1000,
      heartbeat: { intervalMs: 20 },
      onDecision: (d) => decisions.push(d.decision),
    });
    const delivery = { payload: { id: 'evt_taken' } };
    const outcome = gate.run(delivery, async () => {
      store.clear();
      expect((await gate.claim(delivery)).acquired).toBe(true); // another worker takes it
      await later(100);
    });
    await expect(outcome).rejects.toMatchObject({ name: 'LeaseLostError', operation: 'done' });
    expect(decisions).toEqual(['new', 'new', 'lease-lost']);
  });

  it('without the heartbeat the same long handler loses its claim', async () => {
    const store = new MemoryStore();
    const gate = createGate({ store, eventId: 'id', claimTtlMs: 120 });
    const delivery = { payload: { id: 'evt_long' } };
    const long = gate.run(delivery, () => later(400));
    await later(300);
    expect((await gate.run(delivery, () => 'second')).status).toBe('processed');
    await expect(long).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('extends a claim by hand and settles only once', async () => {
    const { gate, advance } = gateWith({ claimTtlMs: 1000 });
    const claim = await gate.claim({ payload: { id: 'evt_ext' } });
    advance(900);
    await claim.extend(5000);
    advance(4000);
    await claim.done();
    await claim.done();
    await claim.release(); // already settled: must not delete the done record
    expect((await gate.run({ payload: { id: 'evt_ext' } }, () => 1)).status).toBe('duplicate');
  });

  it('settling a claim it does not own never touches the store', async () => {
    const { gate } = gateWith();
    const owner = await gate.claim({ payload: { id: 'evt_own' } });
    const loser = await gate.claim({ payload: { id: 'evt_own' } });
    expect(loser.status).toBe('in-flight');
    await loser.release();
    await loser.fail(new Error('x'));
    expect((await gate.claim({ payload: { id: 'evt_own' } })).status).toBe('in-flight');
    await owner.done();
  });

  it('reports a lost claim on extend', async () => {
    const { gate, advance } = gateWith({ claimTtlMs: 1000 });
    const claim = await gate.claim({ payload: { id: 'evt_x' } });
    advance(1001);
    expect((await gate.claim({ payload: { id: 'evt_x' } })).acquired).toBe(true);
    await expect(claim.extend()).rejects.toMatchObject({
      name: 'LeaseLostError',
      operation: 'extend',
    });
  });
});

describe('sequence guard', () => {
  const at = (id: string, grant: string, time: string | number) => ({
    payload: { id, grant_id: grant, occurred_at: time },
  });

  it("a failed event's retry is processed, not stale", async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const event = at('e5', 'g1', '2024-05-01T10:00:00Z');
    await expect(gate.run(event, () => Promise.reject(new Error('transient')))).rejects.toThrow();
    expect((await gate.run(event, () => 'applied')).status).toBe('processed');
  });

  it('a newer event after a failed one still applies, and the failed one is then stale', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const older = at('e1', 'g1', 1_714_557_600);
    await expect(gate.run(older, () => Promise.reject(new Error('transient')))).rejects.toThrow();
    expect((await gate.run(at('e2', 'g1', 1_714_557_601), () => 1)).status).toBe('processed');
    expect((await gate.run(older, () => 1)).status).toBe('stale');
  });

  it("equal timestamps are stale by default and apply with ties: 'apply'", async () => {
    const drop = gateWith({ provider: providers.stripe, sequence: true }).gate;
    const apply = gateWith({ provider: providers.stripe, sequence: { ties: 'apply' } }).gate;
    const first = {
      payload: { id: 'evt_a', created: 1_714_557_600, data: { object: { id: 'cus_1' } } },
    };
    const second = {
      payload: { id: 'evt_b', created: 1_714_557_600, data: { object: { id: 'cus_1' } } },
    };
    for (const gate of [drop, apply])
      expect((await gate.run(first, () => 1)).status).toBe('processed');
    expect((await drop.run(second, () => 1)).status).toBe('stale');
    expect((await apply.run(second, () => 1)).status).toBe('processed');
  });

  it('keeps watermarks per subject and within the namespace', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    expect((await gate.run(at('e1', 'g1', '2024-05-02'), () => 1)).status).toBe('processed');
    expect((await gate.run(at('e2', 'g2', '2024-05-01'), () => 1)).status).toBe('processed');
  });

  it('hands the handler the subject and the event time in epoch ms', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal });
    const outcome = await gate.run(at('e9', 'g7', '2024-05-01T10:00:00+02:00'), (event) => event);
    expect(outcome).toMatchObject({
      status: 'processed',
      result: {
        key: 'evt:e9',
        source: 'event-id',
        subject: 'g7',
        occurredAt: Date.UTC(2024, 4, 1, 8),
      },
    });
  });

  it('without the guard a bad timestamp only means no occurredAt', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal });
    const outcome = await gate.run(at('e10', 'g1', 'not a time'), (event) => event.occurredAt);
    expect(outcome).toMatchObject({ status: 'processed', result: undefined });
  });
});

describe('invalid deliveries', () => {
  const sequenced = () =>
    gateWith({ provider: providers.grantPortal, sequence: true, digestFallback: false });

  it.each([
    ['malformed JSON', { rawBody: '{"id":' }, 'not-json'],
    ['invalid UTF-8', { rawBody: new Uint8Array([0xc3, 0x28]) }, 'not-json'],
    ['an empty body', { rawBody: new Uint8Array() }, 'not-json'],
    ['no id and no digest fallback', { payload: { grant_id: 'g', occurred_at: 1 } }, 'missing-id'],
    ['no subject', { payload: { id: 'e', occurred_at: '2024-01-01' } }, 'missing-subject'],
    ['no timestamp', { payload: { id: 'e', grant_id: 'g' } }, 'bad-timestamp'],
    [
      'a garbage timestamp',
      { payload: { id: 'e', grant_id: 'g', occurred_at: 'soon' } },
      'bad-timestamp',
    ],
    [
      'a negative timestamp',
      { payload: { id: 'e', grant_id: 'g', occurred_at: -5 } },
      'bad-timestamp',
    ],
    [
      'a timestamp far in the future',
      { payload: { id: 'e', grant_id: 'g', occurred_at: Date.now() + 7 * 86_400_000 } },
      'bad-timestamp',
    ],
  ])('refuses %s with InvalidDeliveryError and claims nothing', async (_name, delivery, reason) => {
    const { gate, store, decisions } = sequenced();
    let runs = 0;
    const error = await gate.run(delivery, () => runs++).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidDeliveryError);
    expect(error).toBeInstanceOf(HookgateError);
    expect(error).toMatchObject({ code: 'INVALID_DELIVERY', reason });
    expect(runs).toBe(0);
    expect(store.size).toBe(0);
    expect(decisions).toMatchObject([{ decision: 'invalid', reason }]);
  });
});

describe('a store that is down', () => {
  const down: ClaimStore = {
    claim: () => Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6390')),
    done: () => Promise.reject(new Error('ECONNREFUSED')),
    release: () => Promise.reject(new Error('ECONNREFUSED')),
    extend: () => Promise.reject(new Error('ECONNREFUSED')),
    advance: () => Promise.reject(new Error('ECONNREFUSED')),
    releaseHold: () => Promise.reject(new Error('ECONNREFUSED')),
    extendHold: () => Promise.reject(new Error('ECONNREFUSED')),
  };

  it('fails closed: StoreUnavailableError with the cause, handler not called', async () => {
    const decisions: DecisionEvent[] = [];
    const gate = createGate({ store: down, eventId: 'id', onDecision: (d) => decisions.push(d) });
    let runs = 0;
    const error = await gate.run({ payload: { id: 'e1' } }, () => runs++).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      cause: { message: 'ECONNREFUSED 127.0.0.1:6390' },
    });
    expect(runs).toBe(0);
    expect(decisions).toMatchObject([{ decision: 'store-unavailable', key: 'evt:e1' }]);
  });

  it('a store failing during the sequence guard frees the claim and runs nothing', async () => {
    const store = new MemoryStore();
    store.advance = () => Promise.reject(new Error('timeout'));
    const gate = createGate({ store, provider: providers.grantPortal, sequence: true });
    const delivery = { payload: { id: 'e1', grant_id: 'g', occurred_at: 1_714_557_600 } };
    await expect(gate.run(delivery, () => 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    await later(1);
    expect(await store.claim('hookgate:evt:e1', 'probe', 1000)).toBe('acquired');
  });
});

describe('decision events', () => {
  it('reports each decision with key, source, subject and event time', async () => {
    const { gate, decisions } = gateWith({ provider: providers.grantPortal, sequence: true });
    const delivery = { payload: { id: 'e1', grant_id: 'g1', occurred_at: '2024-05-01T10:00:00Z' } };
    await gate.run(delivery, () => 1);
    await gate.run(delivery, () => 1);
    await gate.run(
      { payload: { id: 'e0', grant_id: 'g1', occurred_at: '2024-04-01T10:00:00Z' } },
      () => 1,
    );
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'done', 'duplicate', 'stale']);
    expect(decisions[0]).toEqual({
      decision: 'new',
      namespace: 'hookgate',
      provider: 'grantPortal',
      key: 'evt:e1',
      source: 'event-id',
      subject: 'g1',
      occurredAt: Date.UTC(2024, 4, 1, 10),
      at: expect.any(Number),
    });
    expect(decisions[1]?.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('a throwing or rejecting hook never breaks the gate', async () => {
    const hooks: Array<(event: DecisionEvent) => void> = [
      () => {
        throw new Error('logger exploded');
      },
      () => Promise.reject(new Error('async logger exploded')),
    ];
    for (const onDecision of hooks) {
      const gate = createGate({ store: new MemoryStore(), eventId: 'id', onDecision });
      expect((await gate.run({ payload: { id: 'e' } }, () => 1)).status).toBe('processed');
    }
  });
});

describe('options', () => {
  it('explicit options win over the preset', async () => {
    const { gate } = gateWith({ provider: providers.stripe, eventId: { header: 'X-Id' } });
    const outcome = await gate.run(
      { payload: { id: 'evt_1' }, headers: { 'x-id': 'h1' } },
      () => 1,
    );
    expect(outcome.key).toBe('evt:h1');
  });

  it('a preset can be spread into the options', async () => {
    const store = new MemoryStore();
    const gate = createGate({ store, ...providers.stripe, doneTtlMs: 1000 });
    expect((await gate.run({ payload: { id: 'evt_9' } }, () => 1)).key).toBe('evt:evt_9');
  });

  it('a namespace cannot alias another one’s keys: X:seq is refused, so seq keys stay X’s own', async () => {
    const store = new MemoryStore();
    expect(() => createGate({ store, namespace: 'X:seq' })).toThrow(/`namespace`/);
    const ok = createGate({ store, namespace: 'A-z_0.9', eventId: 'id' });
    expect((await ok.run({ payload: { id: 'e' } }, () => 1)).status).toBe('processed');
    expect(await store.claim('A-z_0.9:evt:e', 'probe', 1000)).toBe('done');
  });

  it('namespaces separate tenants', async () => {
    const store = new MemoryStore();
    const a = createGate({ store, eventId: 'id', namespace: 'tenant-a' });
    const b = createGate({ store, eventId: 'id', namespace: 'tenant-b' });
    expect((await a.run({ payload: { id: 'e' } }, () => 1)).status).toBe('processed');
    expect((await b.run({ payload: { id: 'e' } }, () => 1)).status).toBe('processed');
  });

  it.each([
    [{ store: {} }, 'store'],
    [{ namespace: '' }, 'namespace'],
    [{ namespace: 'has space' }, 'namespace'],
    [{ claimTtlMs: 0 }, 'claimTtlMs'],
    [{ doneTtlMs: 1.5 }, 'doneTtlMs'],
    [{ onFailure: 'ignore' }, 'onFailure'],
    [{ sequence: true, subject: undefined }, 'sequence'],
    [{ sequence: { subject: 'a', occurredAt: 'b', ties: 'maybe' } }, 'sequence.ties'],
    [{ namespace: 'tenant:a' }, 'namespace'],
    [{ namespace: 'x'.repeat(65) }, 'namespace'],
    [{ namespace: 'tenant/a' }, 'namespace'],
    [{ heartbeat: { intervalMs: 400_000 } }, 'heartbeat.intervalMs'],
    [{ heartbeat: { maxMs: 0 } }, 'heartbeat.maxMs'],
    [{ heartbeat: { intervalMs: 1.5 } }, 'heartbeat.intervalMs'],
    // Past 2^31 - 1 ms a timer fires every millisecond: refused.
    [{ claimTtlMs: 2 ** 33, heartbeat: { intervalMs: 2 ** 31 } }, 'heartbeat.intervalMs'],
    [{ heartbeat: 'yes' }, 'heartbeat'],
    [{ heartbeat: [] }, 'heartbeat'],
    // No interval is shorter than a claim of 1 ms: the option the caller set is named.
    [{ claimTtlMs: 1, heartbeat: true }, 'claimTtlMs'],
    [{ eventId: 'data..id' }, 'eventId'],
    [{ eventId: { header: 'bad header' } }, 'eventId'],
    [{ eventId: 42 }, 'eventId'],
    [{ eventId: [] }, 'eventId'],
    [{ digestFallback: 'false' }, 'digestFallback'],
    [{ digestFallback: 0 }, 'digestFallback'],
    [{ name: 42 }, 'name'],
    [{ name: ' ' }, 'name'],
    [{ sequence: 'yes', subject: 'a', occurredAt: 'b' }, 'sequence'],
    [{ sequence: 1, subject: 'a', occurredAt: 'b' }, 'sequence'],
    [{ sequence: [], subject: 'a', occurredAt: 'b' }, 'sequence'],
    [{ provider: { name: 'acme', doneTtlMs: -1 } }, 'provider.doneTtlMs'],
    [{ provider: { name: 'acme', eventId: [] } }, 'provider.eventId'],
    [{ provider: { name: 'acme', digestFallback: 'no' } }, 'provider.digestFallback'],
    [{ provider: { eventId: 'id' } }, 'provider.name'],
    // A misspelt option is refused, not ignored for its default.
    [{ onfailure: 'retain' }, 'onfailure'],
    [{ claimTTLMs: 5 }, 'claimTTLMs'],
    [{ heartbeat: { intervalMS: 10 } }, 'heartbeat.intervalMS'],
    [{ sequence: { subject: 'a', occurredAt: 'b', tie: 'apply' } }, 'sequence.tie'],
  ])('refuses %j at construction, naming the option', (bad, option) => {
    const build = () =>
      createGate({ store: new MemoryStore(), ...(bad as Partial<GateOptions>) } as GateOptions);
    expect(build).toThrow(HookgateError);
    expect(build).toThrow(`\`${option}\``);
  });

  it('the TTLs the docs give by default: claim 5 min, done 24 h, watermark 30 days, heartbeat 1 h', async () => {
    const store = new MemoryStore({ now: () => 1_750_000_000_000 });
    const gate = createGate({
      store,
      eventId: 'id',
      subject: 's',
      occurredAt: 't',
      sequence: true,
    });
    const claim = await gate.claim({ payload: { id: 'a', s: 'x', t: 1_000 } });
    expect(await gate.inspect('evt:a')).toMatchObject({ state: 'processing', ttlMs: 300_000 });
    expect(await store.inspect('hookgate:seq:x')).toMatchObject({ ttlMs: 30 * 86_400_000 });
    await claim.done();
    expect(await gate.inspect('evt:a')).toMatchObject({ state: 'done', ttlMs: 86_400_000 });
    expect(resolveGateOptions({ store, heartbeat: true }).heartbeat?.maxMs).toBe(3_600_000);
  });

  it('a heartbeat for a claimTtlMs past 74 days beats at most every 2,147,483,647 ms', () => {
    const { heartbeat } = resolveGateOptions({
      store: new MemoryStore(),
      claimTtlMs: 2 ** 34,
      heartbeat: true,
    });
    expect(heartbeat?.intervalMs).toBe(2_147_483_647);
  });
});

describe('a store that fails after the handler ran', () => {
  it('resolves processed (the work happened) after retrying done once; a failure retried away is not reported', async () => {
    const store = new MemoryStore();
    const realDone = store.done.bind(store);
    let failures = 1;
    store.done = (...args) =>
      failures-- > 0 ? Promise.reject(new Error('blip')) : realDone(...args);
    const decisions: string[] = [];
    const gate = createGate({
      store,
      eventId: 'id',
      onDecision: (d) => decisions.push(d.decision),
    });
    expect(await gate.run({ payload: { id: 'e1' } }, () => 'work')).toMatchObject({
      status: 'processed',
    });
    expect(decisions).toEqual(['new', 'done']);
    expect((await gate.run({ payload: { id: 'e1' } }, () => 'again')).status).toBe('duplicate');
  });
});

describe('selector functions', () => {
  it('see the payload parsed when only rawBody is given, beside its headers and bytes', async () => {
    const seen: Delivery[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: (delivery) => {
        seen.push(delivery);
        return (delivery.payload as { id: string }).id;
      },
    });
    const rawBody = new TextEncoder().encode('{"id":"evt_raw"}');
    const headers = { 'x-request-id': 'r1' };
    const outcome = await gate.run({ rawBody, headers }, (_event, delivery) => {
      seen.push(delivery);
      return 1;
    });
    expect(outcome.key).toBe('evt:evt_raw');
    // The selector and the handler see the same delivery: the parsed payload, and what came.
    expect(seen).toHaveLength(2);
    for (const delivery of seen) {
      expect(delivery.payload).toEqual({ id: 'evt_raw' });
      expect(delivery.headers).toBe(headers);
      expect(delivery.rawBody).toBe(rawBody);
    }
  });

  it('a subject or time selector that throws only informs: refused with the guard, left out without', async () => {
    const boom = () => {
      throw new Error('no such field');
    };
    const decisions: DecisionEvent[] = [];
    const informative = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      subject: boom,
      occurredAt: boom,
      onDecision: (d) => decisions.push(d),
    });
    expect((await informative.run({ payload: { id: 'e1' } }, () => 1)).status).toBe('processed');
    expect(decisions[0]).not.toHaveProperty('subject');
    expect(decisions[0]).not.toHaveProperty('occurredAt');

    const guarded = (options: Partial<GateOptions>) =>
      createGate({
        store: new MemoryStore(),
        eventId: 'id',
        subject: 'sub',
        occurredAt: 'at',
        sequence: true,
        ...options,
      });
    await expect(
      guarded({ subject: boom }).run({ payload: { id: 'e1', at: 1 } }, () => 1),
    ).rejects.toMatchObject({ reason: 'missing-subject' });
    await expect(
      guarded({ occurredAt: boom }).run({ payload: { id: 'e1', sub: 's' } }, () => 1),
    ).rejects.toMatchObject({ reason: 'bad-timestamp' });
  });
});

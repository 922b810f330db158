import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  type ClaimStore,
  createGate,
  type DecisionEvent,
  type GateOptions,
  HookgateError,
  InvalidDeliveryError,
  providers,
  StoreUnavailableError,
} from '../src/index.js';

function gateWith(options: Partial<GateOptions> = {}, store: ClaimStore = new MemoryStore()) {
  const decisions: DecisionEvent[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (event) => decisions.push(event),
    ...options,
  });
  return { gate, store, decisions };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('gate.inspect', () => {
  it('follows an event from absent to processing to done, by delivery, id or key', async () => {
    const { gate } = gateWith({ claimTtlMs: 30_000, doneTtlMs: 600_000 });
    const delivery = { payload: { id: 'evt_1', amount: 5 } };
    expect(await gate.inspect(delivery)).toEqual({ key: 'evt:evt_1', state: 'absent' });

    const running = deferred();
    const inside = deferred();
    const run = gate.run(delivery, async () => {
      inside.resolve();
      await running.promise;
    });
    await inside.promise;
    const processing = await gate.inspect({ id: 'evt_1' });
    expect(processing).toMatchObject({ key: 'evt:evt_1', state: 'processing' });
    expect(processing.ttlMs).toBeGreaterThan(29_000);
    expect(processing.ttlMs).toBeLessThanOrEqual(30_000);
    running.resolve();
    await run;

    const done = await gate.inspect('evt:evt_1');
    expect(done).toMatchObject({ key: 'evt:evt_1', state: 'done' });
    expect(done.ttlMs).toBeGreaterThan(599_000);
  });

  it('keys an id as the gate does, hashing included, and a digest-keyed delivery by its digest', async () => {
    const { gate } = gateWith({ eventId: undefined });
    const hostile = 'id with spaces/and:colons';
    const byId = await gate.inspect({ id: hostile });
    expect(byId.key).toMatch(/^evt:#[0-9a-f]{64}$/);

    const delivery = { payload: { b: 1, a: [1, 2] } };
    const outcome = await gate.run(delivery, () => 'ok');
    expect(outcome.key).toMatch(/^dig:/);
    expect(await gate.inspect(delivery)).toMatchObject({ key: outcome.key, state: 'done' });
    expect(await gate.inspect(outcome.key)).toMatchObject({ key: outcome.key, state: 'done' });
  });

  it('shows the fingerprint a record carries', async () => {
    const { gate } = gateWith({ fingerprint: true });
    await gate.run({ payload: { id: 'evt_f', n: 1 } }, () => 1);
    const { fingerprint } = await gate.inspect({ id: 'evt_f' });
    expect(fingerprint).toMatch(/^[0-9a-f]{16,}$/);
  });

  it("shows the subject's watermark for a delivery of a gate with the sequence guard", async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const payload = { id: 'e2', grant_id: 'g1', occurred_at: '2024-05-02T00:00:00Z' };
    await gate.run({ payload }, () => 1);
    const older = { payload: { id: 'e1', grant_id: 'g1', occurred_at: '2024-05-01T00:00:00Z' } };
    expect(await gate.inspect(older)).toEqual({
      key: 'evt:e1',
      state: 'absent',
      watermark: { at: Date.parse('2024-05-02T00:00:00Z'), key: 'evt:e2' },
    });
    // An id or a key names no subject: no watermark.
    expect(await gate.inspect({ id: 'e1' })).not.toHaveProperty('watermark');
  });

  it('rejects what it cannot key, and a store without inspect, with typed errors', async () => {
    const { gate } = gateWith();
    await expect(gate.inspect('evt_1')).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    // Only a key the gate could have made reaches the store: a plain id, or a SHA-256 in hex.
    for (const key of [
      'evt:has space',
      'evt:line\nbreak',
      `evt:${'x'.repeat(129)}`,
      'evt:#abc',
      'dig:abc',
      `dig:${'A'.repeat(64)}`,
    ]) {
      await expect(gate.inspect(key)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      await expect(gate.forget(key)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    }
    for (const key of [
      `evt:${'x'.repeat(128)}`,
      `evt:#${'0'.repeat(64)}`,
      `dig:${'f'.repeat(64)}`,
    ]) {
      expect((await gate.inspect(key)).state).toBe('absent');
    }
    await expect(gate.inspect({ id: '  ' })).rejects.toBeInstanceOf(HookgateError);
    await expect(gate.inspect({ rawBody: '{not json' })).rejects.toBeInstanceOf(
      InvalidDeliveryError,
    );
    // A store written before ClaimStore had inspect and forget.
    const store = new MemoryStore();
    const old: ClaimStore = {
      claim: store.claim.bind(store),
      done: store.done.bind(store),
      release: store.release.bind(store),
      extend: store.extend.bind(store),
      advance: store.advance.bind(store),
      releaseHold: store.releaseHold.bind(store),
      extendHold: store.extendHold.bind(store),
    };
    const legacy = gateWith({}, old).gate;
    await expect(legacy.inspect({ id: 'a' })).rejects.toThrow(/no inspect\(\)/);
    await expect(legacy.forget({ id: 'a' })).rejects.toThrow(/no forget\(\)/);
  });

  it('a store failure is StoreUnavailableError, reported as store-unavailable', async () => {
    const store = new MemoryStore();
    store.inspect = () => Promise.reject(new Error('ECONNREFUSED'));
    const { gate, decisions } = gateWith({}, store);
    await expect(gate.inspect({ id: 'a' })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(decisions.map((d) => d.decision)).toEqual(['store-unavailable']);
  });

  it('a value that is not an event record under its key is a foreign-value error, reported too', async () => {
    const store = new MemoryStore();
    const { gate, decisions } = gateWith({}, store);
    await store.advance('hookgate:evt:a', {
      at: 1_000,
      eventKey: 'evt:b',
      token: 'token',
      holdMs: 60_000,
      ttlMs: 60_000,
      ties: 'drop',
    }); // a watermark where an event's record belongs
    const refused = await gate.inspect({ id: 'a' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect(refused).toMatchObject({ reason: 'foreign-value' });
    expect(decisions).toMatchObject([{ decision: 'store-unavailable', reason: 'inspect' }]);
  });
});

describe('gate.forget', () => {
  it('makes a done event run again, and reports forgotten', async () => {
    const { gate, decisions } = gateWith();
    const delivery = { payload: { id: 'evt_r' } };
    let runs = 0;
    await gate.run(delivery, () => runs++);
    expect((await gate.run(delivery, () => runs++)).status).toBe('duplicate');
    expect(await gate.forget({ id: 'evt_r' })).toBe(true);
    expect(await gate.forget({ id: 'evt_r' })).toBe(false);
    expect((await gate.run(delivery, () => runs++)).status).toBe('processed');
    expect(runs).toBe(2);
    const forgotten = decisions.filter((d) => d.decision === 'forgotten');
    expect(forgotten).toHaveLength(1);
    expect(forgotten[0]).toMatchObject({ key: 'evt:evt_r', source: 'event-id' });
  });

  it('forgets a claim in flight: a redelivery runs beside it, and the first lease is lost', async () => {
    const { gate } = gateWith();
    const delivery = { payload: { id: 'evt_inflight' } };
    const release = deferred();
    const inside = deferred();
    const first = gate.run(delivery, async () => {
      inside.resolve();
      await release.promise;
    });
    await inside.promise;
    expect((await gate.run(delivery, () => 1)).status).toBe('in-flight');
    expect(await gate.forget(delivery)).toBe(true);
    expect((await gate.run(delivery, () => 1)).status).toBe('processed');
    release.resolve();
    await expect(first).rejects.toMatchObject({ name: 'LeaseLostError' });
  });

  it("keeps the subject's watermark: an older event replayed is still stale", async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const at = (id: string, day: string) => ({
      payload: { id, grant_id: 'g1', occurred_at: `2024-05-0${day}T00:00:00Z` },
    });
    await gate.run(at('e1', '1'), () => 1);
    await gate.run(at('e2', '2'), () => 1);
    expect(await gate.forget(at('e1', '1'))).toBe(true);
    expect((await gate.run(at('e1', '1'), () => 1)).status).toBe('stale');
    expect(await gate.forget('evt:e2')).toBe(true);
    expect((await gate.run(at('e2', '2'), () => 1)).status).toBe('processed');
  });
});

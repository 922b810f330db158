/**
 * A store that misbehaves (a third-party ClaimStore, a client under a type mapping) fails
 * closed: an answer outside its contract, or an error that cannot even be described, is a
 * `StoreUnavailableError` reported as `store-unavailable`, never a TypeError, a lost lease, a
 * guess, a settle that hangs or a claim (or a subject's hold) left held.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { RedisStore } from '../../redis-core/src/index.js';
import {
  answered,
  createGate,
  type DecisionEvent,
  providers,
  StoreUnavailableError,
} from '../src/index.js';

function gateOver(store: MemoryStore, extra: Record<string, unknown> = {}) {
  const decisions: DecisionEvent[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (d) => decisions.push(d),
    ...extra,
  });
  return { gate, decisions };
}

describe('foreign answers', () => {
  it('claim resolving null: StoreUnavailableError, not a TypeError', async () => {
    const store = new MemoryStore();
    (store as unknown as { claim: unknown }).claim = () => Promise.resolve(null);
    const { gate } = gateOver(store);
    const error = await gate.run({ payload: { id: 'a' } }, () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
  });

  it('claim answered(null) at once: gate.claim rejects, never throws synchronously', () => {
    const store = new MemoryStore();
    (store as unknown as { claim: unknown }).claim = () => answered(null);
    const { gate } = gateOver(store);
    let threw: unknown;
    let promise: Promise<unknown> | undefined;
    try {
      promise = gate.claim({ payload: { id: 'a' } });
      promise.catch(() => {});
    } catch (error) {
      threw = error;
    }
    expect(threw).toBeUndefined();
    expect(promise).toBeInstanceOf(Promise);
  });

  it('claim resolving a conflict object to a gate without fingerprint: not a TypeError', async () => {
    const store = new MemoryStore();
    (store as unknown as { claim: unknown }).claim = () =>
      Promise.resolve({ state: 'conflict', fingerprint: 'abc' });
    const { gate } = gateOver(store);
    const outcome = await gate.run({ payload: { id: 'a' } }, () => 1).catch((e: unknown) => e);
    expect(outcome).not.toBeInstanceOf(TypeError);
  });

  it('claim resolving an unknown string is not taken as in-flight (409 forever) silently', async () => {
    const store = new MemoryStore();
    (store as unknown as { claim: unknown }).claim = () => Promise.resolve('OK');
    const { gate, decisions } = gateOver(store);
    const outcome = await gate.run({ payload: { id: 'a' } }, () => 1).catch((e: unknown) => e);
    // Observed: { status: 'in-flight' } reported as `in-flight`.
    expect(outcome).toBeInstanceOf(StoreUnavailableError);
    expect(decisions.map((d) => d.decision)).toContain('store-unavailable');
  });

  it('done resolving undefined after the handler ran: not a lost lease', async () => {
    const store = new MemoryStore();
    (store as unknown as { done: unknown }).done = () => Promise.resolve(undefined);
    const { gate, decisions } = gateOver(store);
    const outcome = await gate.run({ payload: { id: 'a' } }, () => 1).catch((e: unknown) => e);
    // Nobody else holds the key (it holds our own processing record): DESIGN.md "A lease is
    // lost only when another owner holds the key".
    expect(decisions.map((d) => d.decision)).not.toContain('lease-lost');
    expect(outcome).toMatchObject({ status: 'processed' });
  });

  it('advance resolving an unknown value: the claim is not left held, and it is reported', async () => {
    const store = new MemoryStore();
    (store as unknown as { advance: unknown }).advance = () => Promise.resolve('weird');
    const { gate, decisions } = gateOver(store, {
      provider: providers.grantPortal,
      eventId: undefined,
      sequence: true,
    });
    const delivery = { payload: { id: 'e1', grant_id: 'g', occurred_at: 1_714_557_600 } };
    const outcome = await gate.run(delivery, () => 1).catch((e: unknown) => e);
    const state = (await gate.inspect(delivery)).state;
    expect({ outcome, state, decisions: decisions.map((d) => d.decision) }).toEqual({
      outcome: expect.any(StoreUnavailableError),
      state: 'absent',
      decisions: expect.arrayContaining(['store-unavailable']),
    });
  });
});

const symbolMessage = () => Object.assign(new Error('odd'), { message: Symbol('no text') });
const throwingMessage = () => {
  const e = new Error('odd');
  Object.defineProperty(e, 'message', {
    get() {
      throw new Error('getter');
    },
  });
  return e;
};

const within = <T>(p: Promise<T>, ms = 5_000) =>
  Promise.race([
    p.then(
      (v) => ({ settled: 'resolved' as const, v }),
      (e: unknown) => ({ settled: 'rejected' as const, e }),
    ),
    new Promise<{ settled: 'pending' }>((r) => setTimeout(() => r({ settled: 'pending' }), ms)),
  ]);

describe('odd store rejections', () => {
  for (const [name, make] of [
    ['symbol message', symbolMessage],
    ['throwing message getter', throwingMessage],
  ] as const) {
    it(`claim rejecting with an Error with a ${name} -> run rejects StoreUnavailableError`, async () => {
      const store = new MemoryStore();
      store.claim = () => Promise.reject(make());
      const decisions: DecisionEvent[] = [];
      const gate = createGate({ store, eventId: 'id', onDecision: (d) => decisions.push(d) });
      const r = await within(gate.run({ payload: { id: 'a' } }, () => 1));
      expect(r.settled).toBe('rejected');
      expect((r as { e: unknown }).e).toBeInstanceOf(StoreUnavailableError);
      expect(decisions.map((d) => d.decision)).toContain('store-unavailable');
    });

    it(`done rejecting with an Error with a ${name} after the handler ran -> run resolves processed`, async () => {
      const store = new MemoryStore();
      store.done = () => Promise.reject(make());
      const gate = createGate({ store, eventId: 'id' });
      let runs = 0;
      const r = await within(
        gate.run({ payload: { id: 'a' } }, () => {
          runs++;
          return 1;
        }),
      );
      expect(runs).toBe(1);
      // The work happened: the gate resolves processed on a StoreUnavailableError from done.
      expect(r.settled).toBe('resolved');
    });

    it(`releaseHold rejecting with an Error with a ${name}: claim.done() resolves, and a later release settles`, async () => {
      const store = new MemoryStore();
      store.releaseHold = () => Promise.reject(make());
      const gate = createGate({ store, provider: providers.grantPortal, sequence: true });
      const claim = await gate.claim({
        payload: { id: 'e1', grant_id: 'g', occurred_at: 1_714_557_600 },
      });
      expect(claim.acquired).toBe(true);
      const done = await within(claim.done());
      // Whatever happened above, a later settle call must settle, never hang.
      const release = await within(claim.release());
      const fail = await within(claim.fail(new Error('x')));
      expect({ done: done.settled, release: release.settled, fail: fail.settled }).toEqual({
        // The done record landed: done should resolve (the hold failure is only reported).
        done: 'resolved',
        release: 'resolved',
        fail: 'resolved',
      });
    });
  }
});

describe('through a shipped store: RedisStore passes an indescribable client error on as it is', () => {
  it('gate.run over a RedisStore whose cluster redirect fails with a symbol-message error', async () => {
    const indescribable = symbolMessage();
    const store = new RedisStore('TestStore', {
      setNxGet: () => Promise.reject(new Error('MOVED 1 10.0.0.2:7001')),
      evalsha: () => Promise.reject(new Error('MOVED 1 10.0.0.2:7001')),
      eval: () => Promise.reject(new Error('MOVED 1 10.0.0.2:7001')),
      redirect: async () => {
        throw indescribable;
      },
    });
    const gate = createGate({ store, eventId: 'id' });
    const error = await gate.run({ payload: { id: 'a' } }, () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
  });
});

afterEach(() => {
  vi.useRealTimers();
});

const at = (id: string, t: number) => ({
  payload: { id, grant_id: 'g1', occurred_at: 1_714_557_600 + t },
});

describe('advance applied, answer lost', () => {
  it('the subject is not blocked for claimTtlMs after the gate released the claim', async () => {
    vi.useFakeTimers({ now: 1_750_000_000_000 });
    const store = new MemoryStore();
    const realAdvance = store.advance.bind(store);
    let armed = true;
    store.advance = (key, request) => {
      if (!armed) return realAdvance(key, request);
      armed = false;
      // The server applied it; the answer timed out.
      return realAdvance(key, request).then(() => {
        throw new Error('advance got no answer in time');
      });
    };
    const gate = createGate({
      store,
      provider: providers.grantPortal,
      sequence: true,
      claimTtlMs: 300_000,
    });
    await expect(gate.run(at('e1', 1), () => 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    // The gate released e1's claim at once ("Free the key now rather than after claimTtl").
    expect((await gate.inspect(at('e1', 1))).state).toBe('absent');
    // A newer event of the subject, a minute later: nothing is processing, yet...
    await vi.advanceTimersByTimeAsync(60_000);
    const e2 = await gate.run(at('e2', 2), () => 'applied');
    // Expected 'processed' (hold released with the claim); a left-over hold answers in-flight
    // until claimTtlMs (5 min) has passed.
    expect(e2.status).toBe('processed');
  });
});

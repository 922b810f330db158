/**
 * The claim's life, from acquired to settled: one regression test per defect of the round-2
 * lifecycle review (numbered as in the issue), each failing on the round-1 code for the reason
 * it names. Timers and `Date` are faked, so nothing here depends on how busy the machine is.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  type ClaimStore,
  canonicalJson,
  createGate,
  type DecisionEvent,
  deriveKey,
  type GateOptions,
  InvalidDeliveryError,
  LeaseLostError,
  providers,
  StoreUnavailableError,
} from '../src/index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_750_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

const tick = (ms: number) => vi.advanceTimersByTimeAsync(ms);

function gateWith(options: Partial<GateOptions> = {}, store: ClaimStore = new MemoryStore()) {
  const decisions: DecisionEvent[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (event) => decisions.push(event),
    ...options,
  });
  const seen = (decision: string) => decisions.filter((d) => d.decision === decision).length;
  return { gate, store, decisions, seen };
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A MemoryStore whose next call of `op` rejects (or throws, `sync`) with a store error. */
function failingOnce(op: keyof ClaimStore, sync = false): MemoryStore {
  const store = new MemoryStore();
  const real = (store[op] as (...args: unknown[]) => Promise<unknown>).bind(store);
  let armed = true;
  (store as unknown as Record<string, unknown>)[op] = (...args: unknown[]) => {
    if (!armed) return real(...args);
    armed = false;
    const error = new Error(`BUSY Redis is busy running a script (${op})`);
    if (sync) throw error;
    return Promise.reject(error);
  };
  return store;
}

describe('1. the first settle attempt ends the heartbeat, even when the store fails it', () => {
  for (const op of ['release', 'done'] as const) {
    it(`a ${op} that meets a store error leaves the claim to expire after claimTtlMs`, async () => {
      const store = failingOnce(op);
      const { gate } = gateWith({ claimTtlMs: 1_000, heartbeat: true }, store);
      const delivery = { payload: { id: 'evt_1' } };
      const claim = await gate.claim(delivery);
      await tick(500);
      const settle = op === 'release' ? claim.release() : claim.done();
      // done is tried twice before it gives up; fail the second try too.
      if (op === 'done') store.done = () => Promise.reject(new Error('BUSY again'));
      await expect(settle).rejects.toBeInstanceOf(StoreUnavailableError);
      await tick(1_001);
      // The heartbeat did not keep the processing record alive: the redelivery runs.
      expect((await gate.run(delivery, () => 'redone')).status).toBe('processed');
    });
  }
});

describe('1b. a settle the store failed goes on in the background until the claim would expire', () => {
  it('a done that failed twice lands on a later try: the redelivery is a duplicate, not a second run', async () => {
    const store = new MemoryStore();
    const realDone = store.done.bind(store);
    let failures = 3; // both inline attempts and the first background one
    store.done = (...args) =>
      failures-- > 0 ? Promise.reject(new Error('connection terminated')) : realDone(...args);
    const { gate, seen, decisions } = gateWith({ claimTtlMs: 10_000 }, store);
    const delivery = { payload: { id: 'evt_1' } };
    let runs = 0;
    expect((await gate.run(delivery, () => ++runs)).status).toBe('processed');
    expect((await gate.run(delivery, () => ++runs)).status).toBe('in-flight');
    await tick(1_000);
    expect((await gate.run(delivery, () => ++runs)).status).toBe('duplicate');
    expect(runs).toBe(1);
    expect(seen('done')).toBe(1);
    // Once per settle (the inline attempts failed), naming the operation; the background is quiet.
    expect(seen('store-unavailable')).toBe(1);
    expect(decisions.find((d) => d.decision === 'store-unavailable')).toMatchObject({
      reason: 'done',
    });
  });

  it("a store back late in the claim's life is tried before the claim expires: no second run", async () => {
    // Claimed 2 s before the store went away, with a 6 s claim: the store is back 3.4 s after
    // the failure, and the claim expires 4 s after it. Pauses that doubled to 3.2 s tried at
    // 3.1 s and then never again, and the redelivery at 4.5 s ran the event a second time.
    const store = new MemoryStore();
    const realDone = store.done.bind(store);
    let down = false;
    store.done = (...args) =>
      down ? Promise.reject(new Error('connection refused')) : realDone(...args);
    const { gate } = gateWith({ claimTtlMs: 6_000 }, store);
    const delivery = { payload: { id: 'evt_1' } };
    let runs = 0;
    const first = gate.run(delivery, async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      down = true;
      return ++runs;
    });
    await tick(2_000);
    expect((await first).status).toBe('processed');
    await tick(3_400);
    down = false;
    await tick(1_100);
    expect((await gate.run(delivery, () => ++runs)).status).toBe('duplicate');
    expect(runs).toBe(1);
  });

  it('it gives up when the claim would have expired, and the redelivery runs', async () => {
    const store = new MemoryStore();
    store.done = () => Promise.reject(new Error('down for good'));
    const { gate } = gateWith({ claimTtlMs: 2_000 }, store);
    const delivery = { payload: { id: 'evt_1' } };
    expect((await gate.run(delivery, () => 1)).status).toBe('processed');
    await tick(2_001);
    const spy = vi.spyOn(store, 'done');
    await tick(30_000);
    expect(spy).not.toHaveBeenCalled();
    expect((await gate.run(delivery, () => 'again')).status).toBe('processed');
  });

  it('a claim extended past claimTtlMs whose release failed expires after that extension', async () => {
    const store = new MemoryStore();
    store.release = () => Promise.reject(new Error('ECONNRESET'));
    const { gate } = gateWith({ claimTtlMs: 1_000 }, store);
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    await claim.extend(60_000);
    await expect(claim.release()).rejects.toBeInstanceOf(StoreUnavailableError);
    await tick(6_000);
    expect((await gate.run(delivery, () => 1)).status).toBe('in-flight');
    await tick(54_001);
    expect((await gate.run(delivery, () => 1)).status).toBe('processed');
  });
});

describe('3. the sequence guard lets one event per subject in at a time', () => {
  const at = (id: string, t: number) => ({
    payload: { id, grant_id: 'g1', occurred_at: 1_714_557_600 + t },
  });

  it('a newer event arriving while an older one runs is in-flight; the newest state is the last applied', async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    const applied: string[] = [];
    const slow = deferred();
    const e2 = gate.run(at('e2', 2), async (event) => {
      await slow.promise;
      applied.push(event.key);
    });
    await tick(0);
    // e3 is newer, but e2 holds the subject: come back later.
    expect(await gate.run(at('e3', 3), (event) => applied.push(event.key))).toEqual({
      status: 'in-flight',
      key: 'evt:e3',
    });
    slow.resolve();
    expect((await e2).status).toBe('processed');
    // The provider comes back with e3: newer than the watermark, processed.
    expect((await gate.run(at('e3', 3), (event) => applied.push(event.key))).status).toBe(
      'processed',
    );
    expect(applied).toEqual(['evt:e2', 'evt:e3']);
    // And e1, older than both, is stale.
    expect((await gate.run(at('e1', 1), () => applied.push('e1'))).status).toBe('stale');
  });

  it("the subject's hold ends when the event's handler fails, and the retry runs", async () => {
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true });
    await expect(gate.run(at('e2', 2), () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect((await gate.run(at('e3', 3), () => 1)).status).toBe('processed');
  });

  it("the subject's hold expires with its claim when the worker crashed", async () => {
    const { gate } = gateWith({
      provider: providers.grantPortal,
      sequence: true,
      claimTtlMs: 1_000,
    });
    expect((await gate.claim(at('e2', 2))).acquired).toBe(true); // never settled
    expect((await gate.run(at('e3', 3), () => 1)).status).toBe('in-flight');
    await tick(1_001);
    expect((await gate.run(at('e3', 3), () => 1)).status).toBe('processed');
  });

  it("a settle the store fails reports the done's failure and the hold's, each with its reason", async () => {
    const store = new MemoryStore();
    store.done = () => Promise.reject(new Error('ECONNRESET'));
    store.releaseHold = () => Promise.reject(new Error('ECONNRESET'));
    const { gate, decisions } = gateWith(
      { provider: providers.grantPortal, sequence: true },
      store,
    );
    expect((await gate.run(at('e2', 2), () => 1)).status).toBe('processed');
    const failures = decisions.filter((d) => d.decision === 'store-unavailable');
    expect(failures.map((d) => d.reason)).toEqual(['done', 'releaseHold']);
  });

  it('an older event arriving while the subject is held is stale at once, not in-flight', async () => {
    const { gate, seen } = gateWith({ provider: providers.grantPortal, sequence: true });
    expect((await gate.claim(at('e2', 2))).acquired).toBe(true); // holds the subject
    expect((await gate.run(at('e1', 1), () => 1)).status).toBe('stale');
    expect((await gate.run(at('e3', 3), () => 1)).status).toBe('in-flight');
    expect(seen('stale')).toBe(1);
  });

  it('an extend after another worker took the same event (and so the hold) is a lost lease', async () => {
    const { gate, seen } = gateWith({
      provider: providers.grantPortal,
      sequence: true,
      claimTtlMs: 1_000,
    });
    const claim = await gate.claim(at('e2', 2));
    await tick(1_001);
    const other = await gate.claim(at('e2', 2)); // the redelivery: its advance takes the hold
    expect(other.acquired).toBe(true);
    await expect(claim.extend()).rejects.toBeInstanceOf(LeaseLostError);
    await expect(claim.done()).rejects.toBeInstanceOf(LeaseLostError);
    expect(seen('lease-lost')).toBe(1);
    await other.done();
    expect((await gate.run(at('e2', 2), () => 1)).status).toBe('duplicate');
  });

  it('an extend after another event took the hold, its own key untaken, extends nothing and is not lost', async () => {
    const { gate, seen } = gateWith({
      provider: providers.grantPortal,
      sequence: true,
      claimTtlMs: 1_000,
    });
    const claim = await gate.claim(at('e2', 2));
    await tick(1_001);
    const newer = await gate.claim(at('e3', 3)); // e2's hold expired: e3 takes the subject
    expect(newer.acquired).toBe(true);
    await claim.extend(60_000);
    expect(seen('lease-lost')).toBe(0);
    // Nothing was extended: e2's claim stays expired, and its redelivery is stale now.
    expect(await gate.inspect(at('e2', 2))).toMatchObject({ state: 'absent' });
    await newer.done();
    expect((await gate.run(at('e2', 2), () => 1)).status).toBe('stale');
  });

  it('a handler that outlives its claim and hold can apply an older state last: its redelivery was stale, its done is lost', async () => {
    const { gate, seen } = gateWith({
      provider: providers.grantPortal,
      sequence: true,
      claimTtlMs: 1_000,
    });
    const applied: string[] = [];
    const slow = deferred();
    const e2 = gate.run(at('e2', 2), async (event) => {
      await slow.promise;
      applied.push(event.key);
    });
    await tick(1_001); // e2's claim and its hold on the subject expire
    expect((await gate.run(at('e3', 3), (event) => applied.push(event.key))).status).toBe(
      'processed',
    );
    // e2's redelivery is recorded done as stale, without running.
    expect((await gate.run(at('e2', 2), () => applied.push('again'))).status).toBe('stale');
    slow.resolve();
    await expect(e2).rejects.toBeInstanceOf(LeaseLostError);
    expect(applied).toEqual(['evt:e3', 'evt:e2']); // each ran once; the older state last
    expect(seen('lease-lost')).toBe(1);
  });
});

describe('4. the heartbeat is bounded by heartbeat.maxMs', () => {
  it('a handler that never ends holds its claim for maxMs, then a redelivery runs and the late handler gets LeaseLostError', async () => {
    const { gate, seen } = gateWith({
      claimTtlMs: 1_000,
      heartbeat: { maxMs: 10_000 },
    });
    const delivery = { payload: { id: 'evt_hang' } };
    const hang = deferred();
    const first = gate.run(delivery, () => hang.promise);
    const settled = first.catch((error: unknown) => error);
    await tick(9_000);
    expect((await gate.run(delivery, () => 'x')).status).toBe('in-flight');
    await tick(2_100); // past maxMs, and past the last extension's claimTtlMs
    expect(await gate.run(delivery, () => 'redone')).toMatchObject({ status: 'processed' });
    hang.resolve();
    expect(await settled).toBeInstanceOf(LeaseLostError);
    expect(seen('lease-lost')).toBe(1);
  });

  it('intervalMs defaults to claimTtlMs / 3 when only maxMs is given', async () => {
    const store = new MemoryStore();
    const extend = vi.spyOn(store, 'extend');
    const { gate } = gateWith({ claimTtlMs: 900, heartbeat: { maxMs: 60_000 } }, store);
    const hang = deferred();
    const run = gate.run({ payload: { id: 'evt_1' } }, () => hang.promise);
    await tick(3_000);
    expect(extend).toHaveBeenCalledTimes(10);
    hang.resolve();
    await run;
  });
});

describe('5. every store call is guarded: a synchronous throw is a rejection', () => {
  it('an extend that throws synchronously in the heartbeat is a missed beat, not a crash', async () => {
    const store = failingOnce('extend', true);
    const { gate } = gateWith({ claimTtlMs: 900, heartbeat: true }, store);
    const run = gate.run(
      { payload: { id: 'evt_1' } },
      () => new Promise((r) => setTimeout(r, 1_000)),
    );
    await tick(1_000); // a throw escaping the timer would surface here
    expect((await run).status).toBe('processed');
  });

  it('a release that throws synchronously after a failed sequence step is a StoreUnavailableError', async () => {
    const store = failingOnce('release', true);
    store.advance = () => Promise.reject(new Error('timeout'));
    const { gate } = gateWith({ provider: providers.grantPortal, sequence: true }, store);
    const delivery = { payload: { id: 'e1', grant_id: 'g', occurred_at: 1_714_557_600 } };
    await expect(gate.run(delivery, () => 1)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  for (const op of ['claim', 'done', 'release'] as const) {
    it(`a ${op} that throws synchronously rejects with StoreUnavailableError`, async () => {
      const store = new MemoryStore();
      const claim = await createGate({ store, eventId: 'id' }).claim({ payload: { id: 'evt_1' } });
      store[op] = () => {
        throw new Error('not connected');
      };
      const gate = createGate({ store, eventId: 'id' });
      const attempt = op === 'claim' ? gate.claim({ payload: { id: 'evt_2' } }) : claim[op]();
      await expect(attempt).rejects.toBeInstanceOf(StoreUnavailableError);
    });
  }
});

describe('6. lease-lost is never reported after a successful done', () => {
  it('an extend reply that arrives after done is not a lost lease', async () => {
    const store = new MemoryStore();
    const realExtend = store.extend.bind(store);
    const realDone = store.done.bind(store);
    // Hold every beat's extend until done has landed, then let it run: it finds d:<token>.
    const pending: Array<() => void> = [];
    store.extend = (...args) =>
      new Promise((resolve, reject) => {
        pending.push(() => realExtend(...args).then(resolve, reject));
      });
    store.done = async (...args) => {
      const owned = await realDone(...args);
      for (const run of pending.splice(0)) run();
      await Promise.resolve();
      return owned;
    };
    const { gate, seen } = gateWith({ claimTtlMs: 900, heartbeat: { intervalMs: 1 } }, store);
    const claim = await gate.claim({ payload: { id: 'evt_1' } });
    await tick(5);
    await claim.done();
    await tick(5);
    expect(seen('done')).toBe(1);
    expect(seen('lease-lost')).toBe(0);
  });
});

describe('6b. settles run one at a time', () => {
  it('a release racing a done that wins is a no-op, not a lost lease', async () => {
    const { gate, seen } = gateWith();
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    await Promise.all([claim.done(), claim.release()]);
    expect(seen('done')).toBe(1);
    expect(seen('lease-lost')).toBe(0);
    expect((await gate.run(delivery, () => 1)).status).toBe('duplicate');
  });
});

describe('9. canonicalJson follows JSON.stringify for toJSON, and hostile payloads are invalid deliveries', () => {
  it('a plain object with its own toJSON is serialized through it', () => {
    const value = { a: 1, toJSON: () => ({ z: 2, b: [1, { toJSON: () => 'x' }] }) };
    expect(canonicalJson(value)).toBe('{"b":[1,"x"],"z":2}');
    expect(canonicalJson(value)).toBe(canonicalJson(JSON.parse(JSON.stringify(value))));
  });

  for (const [name, payload] of [
    [
      'a getter that throws null',
      Object.defineProperty({}, 'x', {
        enumerable: true,
        get() {
          throw null;
        },
      }),
    ],
    [
      'a toJSON that throws a string',
      {
        toJSON() {
          throw 'nope';
        },
      },
    ],
  ] as const) {
    it(`${name} is an InvalidDeliveryError (not-json)`, () => {
      const error = (() => {
        try {
          deriveKey({ payload });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidDeliveryError);
      expect(error).toMatchObject({ reason: 'not-json' });
    });
  }
});

describe('10. once a lease is lost, every later call on the handle rejects with LeaseLostError', () => {
  for (const first of ['release', 'done'] as const) {
    it(`after ${first} finds another owner, done, release and extend reject too`, async () => {
      const { gate, seen } = gateWith({ claimTtlMs: 1_000 });
      const delivery = { payload: { id: 'evt_1' } };
      const claim = await gate.claim(delivery);
      await tick(1_001);
      const other = await gate.claim(delivery);
      expect(other.acquired).toBe(true);
      await expect(claim[first]()).rejects.toBeInstanceOf(LeaseLostError);
      await expect(claim.done()).rejects.toBeInstanceOf(LeaseLostError);
      await expect(claim.release()).rejects.toBeInstanceOf(LeaseLostError);
      await expect(claim.extend()).rejects.toBeInstanceOf(LeaseLostError);
      await expect(claim.fail(new Error('x'))).rejects.toBeInstanceOf(LeaseLostError);
      expect(seen('lease-lost')).toBe(1);
      // The other worker's claim is untouched.
      await other.done();
      expect((await gate.run(delivery, () => 1)).status).toBe('duplicate');
    });
  }
});

describe('11. a lease is lost only when another owner holds the key', () => {
  it('a handler that outlived its claim while nobody took the key records done, once', async () => {
    const { gate, seen } = gateWith({ claimTtlMs: 1_000 });
    const delivery = { payload: { id: 'evt_late' } };
    let runs = 0;
    const run = gate
      .run(delivery, async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 5_000));
        return 'late';
      })
      .then(undefined, (e: unknown) => e);
    await tick(5_000);
    expect(await run).toEqual({ status: 'processed', key: 'evt:evt_late', result: 'late' });
    expect((await gate.run(delivery, () => runs++)).status).toBe('duplicate');
    expect(runs).toBe(1);
    expect(seen('lease-lost')).toBe(0);
  });

  it('a release after a done whose answer was lost finds its own done record: the event stays done', async () => {
    // The store applies each done, then its answer is lost (a timeout after the server ran it).
    const store = new MemoryStore();
    const realDone = store.done.bind(store);
    let lose = true;
    store.done = async (...args) => {
      const owned = await realDone(...args);
      if (lose) throw new Error('ETIMEDOUT after the done was applied');
      return owned;
    };
    const { gate, seen } = gateWith({}, store);
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    const failed = await claim.done().then(undefined, (e: unknown) => e);
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    // What a handler's catch does with a done that threw: fail, which releases.
    lose = false;
    await claim.fail(failed);
    expect(seen('lease-lost')).toBe(0);
    expect(seen('released')).toBe(0);
    expect(seen('done')).toBe(1);
    expect(await gate.inspect(delivery)).toMatchObject({ state: 'done' });
    expect((await gate.run(delivery, () => 1)).status).toBe('duplicate');
    // Settled: the background retry of the done stops, and later settles are no-ops.
    await tick(10_000);
    await claim.release();
    expect(seen('done')).toBe(1);
  });

  it('over a store without inspect, a release after a done whose answer was lost is a lost lease', async () => {
    const memory = new MemoryStore();
    let lose = true;
    const store: ClaimStore = {
      claim: (...args) => memory.claim(...args),
      done: async (...args) => {
        const owned = await memory.done(...args);
        if (lose) throw new Error('ETIMEDOUT after the done was applied');
        return owned;
      },
      release: (...args) => memory.release(...args),
      extend: (...args) => memory.extend(...args),
      advance: (...args) => memory.advance(...args),
      releaseHold: (...args) => memory.releaseHold(...args),
      extendHold: (...args) => memory.extendHold(...args),
    };
    const { gate, seen } = gateWith({}, store);
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    await expect(claim.done()).rejects.toBeInstanceOf(StoreUnavailableError);
    lose = false;
    // It cannot tell its own done record from another owner's: lost, and nothing deleted.
    await expect(claim.release()).rejects.toBeInstanceOf(LeaseLostError);
    expect(seen('lease-lost')).toBe(1);
    expect((await gate.run(delivery, () => 1)).status).toBe('duplicate');
  });

  /** A claim whose done failed and which expired; then another worker's claim of the event. */
  async function takenOver() {
    const store = new MemoryStore();
    const realDone = store.done.bind(store);
    store.done = () => Promise.reject(new Error('ECONNRESET'));
    const { gate, seen } = gateWith({ claimTtlMs: 1_000 }, store);
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    await expect(claim.done()).rejects.toBeInstanceOf(StoreUnavailableError);
    // The claim expires (its background retries of the done fail too), and another worker
    // claims the event; then the store answers again.
    await tick(1_001);
    const other = await gate.claim(delivery);
    expect(other.acquired).toBe(true);
    store.done = realDone;
    return { store, gate, seen, delivery, claim, other };
  }

  it('a release after a failed done still finds another owner lost', async () => {
    const { gate, seen, delivery, claim } = await takenOver();
    await expect(claim.release()).rejects.toBeInstanceOf(LeaseLostError);
    expect(seen('lease-lost')).toBe(1);
    expect(await gate.inspect(delivery)).toMatchObject({ state: 'processing' });
  });

  it('a release after a failed done, whose other owner lets go before the check, is lost and writes nothing', async () => {
    const { store, gate, seen, delivery, claim, other } = await takenOver();
    // Right after this lease's release is refused, the other worker's handler fails and
    // releases: the key is empty when the lease checks whose record it was.
    const realInspect = store.inspect.bind(store);
    store.inspect = async (key) => {
      await other.release();
      return realInspect(key);
    };
    await expect(claim.release()).rejects.toBeInstanceOf(LeaseLostError);
    store.inspect = realInspect;
    expect(seen('lease-lost')).toBe(1);
    // No done record was written for an event nobody finished: the redelivery runs.
    expect(await gate.inspect(delivery)).toMatchObject({ state: 'absent' });
    expect((await gate.run(delivery, () => 1)).status).toBe('processed');
  });

  it('an extend that finds the claim gone, with nobody else holding it, takes it back', async () => {
    const { gate, seen } = gateWith({ claimTtlMs: 1_000 });
    const delivery = { payload: { id: 'evt_1' } };
    const claim = await gate.claim(delivery);
    await tick(1_500);
    await claim.extend();
    expect((await gate.run(delivery, () => 1)).status).toBe('in-flight');
    await claim.done();
    expect(seen('lease-lost')).toBe(0);
  });
});

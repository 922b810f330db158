/**
 * Answers read at once: a store that answers without I/O returns `answered(value)`, and the
 * gate goes on in the same turn. The outcome, the records and the decisions are the same as for
 * a store whose answers are ordinary promises; only the waiting is gone.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  type Admission,
  admit,
  answered,
  answerOf,
  bindingOptions,
  type ClaimStore,
  createGate,
  type DecisionEvent,
  LeaseLostError,
  type Verify,
} from '../src/index.js';

/** The MemoryStore with every answer copied into an ordinary promise, as a networked store's. */
function ordinary(inner: MemoryStore): ClaimStore {
  const later = <T>(answer: Promise<T>) => answer.then((value) => value);
  return {
    claim: (...args) => later(inner.claim(...args)),
    done: (...args) => later(inner.done(...args)),
    release: (...args) => later(inner.release(...args)),
    extend: (...args) => later(inner.extend(...args)),
    advance: (...args) => later(inner.advance(...args)),
    releaseHold: (...args) => later(inner.releaseHold(...args)),
    extendHold: (...args) => later(inner.extendHold(...args)),
    inspect: (key) => inner.inspect(key),
  };
}

function gateOver(store: ClaimStore, options: { sequence?: boolean } = {}) {
  const decisions: string[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (event: DecisionEvent) => decisions.push(event.decision),
    ...(options.sequence ? { subject: 'subject', occurredAt: 'at', sequence: true } : {}),
  });
  return { gate, decisions };
}

describe('answered', () => {
  it('is a promise of its value, which answerOf reads; an ordinary promise has no answer', async () => {
    const answer = answered('acquired');
    expect(answerOf(answer)).toBe('acquired');
    await expect(answer).resolves.toBe('acquired');
    expect(answerOf(Promise.resolve('acquired'))).toBeUndefined();
    expect(answerOf(answer.then((value) => value))).toBeUndefined();
  });

  it('lets gate.run call the handler and record the done in the same turn', async () => {
    const store = new MemoryStore();
    const { gate } = gateOver(store);
    let ran = false;
    const outcome = gate.run({ payload: { id: 'a' } }, () => {
      ran = true;
      return 'ok';
    });
    // Nothing awaited yet: the claim, the handler and the done have all happened.
    expect(ran).toBe(true);
    expect(await store.inspect('hookgate:evt:a')).toMatchObject({ kind: 'done' });
    await expect(outcome).resolves.toEqual({ status: 'processed', key: 'evt:a', result: 'ok' });
  });

  it('does not for ordinary promises: the handler runs a turn later', async () => {
    const { gate } = gateOver(ordinary(new MemoryStore()));
    let ran = false;
    const outcome = gate.run({ payload: { id: 'a' } }, () => {
      ran = true;
    });
    expect(ran).toBe(false);
    await outcome;
    expect(ran).toBe(true);
  });

  it('gives the same outcomes and decisions either way: new, duplicate, in flight, failed, sequenced', async () => {
    const script = async (store: ClaimStore) => {
      const plain = gateOver(store);
      const sequenced = gateOver(store, { sequence: true });
      const outcomes: unknown[] = [];
      const record = async (run: Promise<unknown>) =>
        outcomes.push(await run.catch((error: Error) => `threw ${error.message}`));
      await record(plain.gate.run({ payload: { id: 'a' } }, () => 1));
      await record(plain.gate.run({ payload: { id: 'a' } }, () => 2));
      let finish = () => {};
      const slow = plain.gate.run(
        { payload: { id: 'b' } },
        () => new Promise<void>((resolve) => (finish = resolve)),
      );
      await record(plain.gate.run({ payload: { id: 'b' } }, () => 3));
      finish();
      await record(slow);
      await record(
        plain.gate.run({ payload: { id: 'c' } }, () => {
          throw new Error('handler failed');
        }),
      );
      await record(plain.gate.run({ payload: { id: 'c' } }, () => 4));
      await record(sequenced.gate.run({ payload: { id: 'd', subject: 's', at: 2 } }, () => 5));
      await record(sequenced.gate.run({ payload: { id: 'e', subject: 's', at: 1 } }, () => 6));
      const claim = await plain.gate.claim({ payload: { id: 'f' } });
      await claim.done();
      await record(plain.gate.run({ payload: { id: 'f' } }, () => 7));
      return { outcomes, decisions: [...plain.decisions, ...sequenced.decisions] };
    };
    const atOnce = await script(new MemoryStore());
    const later = await script(ordinary(new MemoryStore()));
    expect(atOnce).toEqual(later);
    expect(atOnce.outcomes).toEqual([
      { status: 'processed', key: 'evt:a', result: 1 },
      { status: 'duplicate', key: 'evt:a' },
      { status: 'in-flight', key: 'evt:b' },
      { status: 'processed', key: 'evt:b', result: undefined },
      'threw handler failed',
      { status: 'processed', key: 'evt:c', result: 4 },
      { status: 'processed', key: 'evt:d', result: 5 },
      { status: 'stale', key: 'evt:e' },
      { status: 'duplicate', key: 'evt:f' },
    ]);
  });

  it('a done answered false (another owner took the key) is a lost lease, as when awaited', async () => {
    const store = new MemoryStore();
    const { gate, decisions } = gateOver(store);
    const outcome = gate.run({ payload: { id: 'a' } }, async () => {
      // The claim is taken over while the handler works.
      await store.forget('hookgate:evt:a');
      await store.claim('hookgate:evt:a', '42', 60_000);
    });
    await expect(outcome).rejects.toBeInstanceOf(LeaseLostError);
    expect(decisions).toContain('lease-lost');
  });
});

describe('gate.claim and admit, read at once', () => {
  const body = (json: unknown) => new TextEncoder().encode(JSON.stringify(json));

  it('gate.claim is answered when the store was, and rejects (never throws) an invalid delivery', async () => {
    const { gate } = gateOver(new MemoryStore());
    const claiming = gate.claim({ payload: { id: 'a' } });
    expect(answerOf(claiming)).toMatchObject({ status: 'acquired', acquired: true, key: 'evt:a' });
    expect(answerOf(gate.claim({ payload: { id: 'a' } }))).toMatchObject({ status: 'in-flight' });
    await answerOf(claiming)!.done();
    expect(answerOf(gate.claim({ payload: { id: 'a' } }))).toMatchObject({ status: 'duplicate' });

    const later = gateOver(ordinary(new MemoryStore())).gate.claim({ payload: { id: 'a' } });
    expect(answerOf(later)).toBeUndefined();
    await expect(later).resolves.toMatchObject({ status: 'acquired' });

    let invalid: Promise<unknown> | undefined;
    expect(() => {
      invalid = gate.claim({ rawBody: new TextEncoder().encode('{') });
    }).not.toThrow();
    await expect(invalid).rejects.toMatchObject({ reason: 'not-json' });
  });

  it("a store whose promises are not native (another library's thenables) is waited for, never read as an answer", async () => {
    const inner = new MemoryStore();
    // Thenables of their own, as a promise library's (`then` gives another such thenable): not
    // native promises, so there is nothing to read at once.
    type Foreign = {
      then(ok?: (value: unknown) => unknown, failed?: (error: unknown) => unknown): Foreign;
    };
    const foreign = (answer: Promise<unknown>): Foreign => ({
      // biome-ignore lint/suspicious/noThenProperty: a thenable is what this stands for
      then: (ok, failed) => foreign(answer.then(ok, failed)),
    });
    const store = {
      ...ordinary(inner),
      claim: (...args: Parameters<MemoryStore['claim']>) => foreign(inner.claim(...args)),
    } as unknown as ClaimStore;
    const { gate } = gateOver(store);
    const first = await gate.claim({ payload: { id: 'a' } });
    expect(first.status).toBe('acquired');
    expect((await gate.claim({ payload: { id: 'a' } })).status).toBe('in-flight');
    let runs = 0;
    expect((await gate.run({ payload: { id: 'a' } }, () => runs++)).status).toBe('in-flight');
    await first.done();
    expect((await gate.run({ payload: { id: 'a' } }, () => runs++)).status).toBe('duplicate');
    expect((await gate.run({ payload: { id: 'b' } }, () => runs++)).status).toBe('processed');
    expect(runs).toBe(1);
  });

  /** Every kind of admission, in order, through `admit` over `store` with `verify`. */
  async function admissions(store: ClaimStore, verify: Verify | false) {
    const gate = createGate({ store, eventId: 'id' });
    const options = bindingOptions('test', { gate, verify });
    const seen: { atOnce: boolean; admission: Admission<unknown> }[] = [];
    const take = async (rawBody: Uint8Array | 'too-large' | 'aborted') => {
      const admitting = admit(options, rawBody, { signature: 'good' });
      const atOnce = answerOf(admitting) !== undefined;
      const admission = await admitting;
      seen.push({ atOnce, admission });
      return admission;
    };
    await take('too-large');
    await take('aborted');
    await take(new TextEncoder().encode('{'));
    const first = await take(body({ id: 'a' }));
    await take(body({ id: 'a' }));
    await first.claim!.done();
    await take(body({ id: 'a' }));
    return seen.map(({ atOnce, admission }) => ({
      atOnce,
      result: admission.claim ? `claim ${admission.claim.status}` : admission.answer,
    }));
  }

  it('admit is answered when verify and the store answered at once, and admits the same either way', async () => {
    const good = (headers: unknown) => (headers as Record<string, string>).signature === 'good';
    const sync: Verify = (_body, headers) => good(headers);
    const async: Verify = async (_body, headers) => good(headers);
    const atOnce = await admissions(new MemoryStore(), sync);
    expect(atOnce.map((a) => a.atOnce)).toEqual([true, true, false, true, true, true]);
    expect(await admissions(new MemoryStore(), false)).toEqual(atOnce);
    const results = atOnce.map((a) => a.result);
    expect(results).toEqual([
      { status: 413, body: { status: 'too-large' }, headers: { Connection: 'close' } },
      { status: 400, body: { status: 'aborted' }, headers: { Connection: 'close' } },
      { status: 400, body: { status: 'invalid', reason: 'not-json' }, headers: {} },
      'claim acquired',
      { status: 409, body: { status: 'in-flight' }, headers: { 'Retry-After': '10' } },
      { status: 200, body: { status: 'duplicate' }, headers: {} },
    ]);
    for (const [store, verify] of [
      [new MemoryStore(), async],
      [ordinary(new MemoryStore()), sync],
      [ordinary(new MemoryStore()), false],
    ] as const) {
      const later = await admissions(store, verify);
      expect(later.map((a) => a.result)).toEqual(results);
      // Only what needs neither verify nor the store is answered at once.
      expect(later.map((a) => a.atOnce)).toEqual([true, true, false, false, false, false]);
    }
  });

  it('admit answers 401 at once for a verify that refuses or throws synchronously, and later for an async one', async () => {
    const thrown = new Error('bad secret');
    const cases: [Verify, string, boolean][] = [
      [() => false, 'rejected', true],
      [() => 'yes' as unknown as boolean, 'not-true', true],
      [
        () => {
          throw thrown;
        },
        'threw',
        true,
      ],
      [
        // A verdict whose `then` getter throws: reading it is part of verifying.
        () =>
          Object.defineProperty({}, 'then', {
            get() {
              throw thrown;
            },
          }) as unknown as boolean,
        'threw',
        true,
      ],
      [async () => false, 'rejected', false],
      [() => Promise.reject(thrown), 'threw', false],
    ];
    for (const [verify, reason, atOnce] of cases) {
      const store = new MemoryStore();
      const decisions: DecisionEvent[] = [];
      const gate = createGate({ store, eventId: 'id', onDecision: (d) => decisions.push(d) });
      const admitting = admit(bindingOptions('test', { gate, verify }), body({ id: 'a' }), {});
      expect(answerOf(admitting) !== undefined).toBe(atOnce);
      await expect(admitting).resolves.toEqual({
        answer: { status: 401, body: { status: 'unauthorized' }, headers: {} },
      });
      expect(decisions.map((d) => [d.decision, d.reason])).toEqual([['unverified', reason]]);
      if (reason === 'threw') expect(decisions[0]?.error).toBe(thrown);
      expect(store.size).toBe(0);
    }
  });
});

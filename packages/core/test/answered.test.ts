/**
 * Answers read at once: a store that answers without I/O returns `answered(value)`, and the
 * gate goes on in the same turn. The outcome, the records and the decisions are the same as for
 * a store whose answers are ordinary promises; only the waiting is gone.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  answered,
  type ClaimStore,
  createGate,
  type DecisionEvent,
  LeaseLostError,
} from '../src/index.js';
import { answerOf } from '../src/store.js';

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

/**
 * What a handler wrapper (a database transaction, a ledger) gets from the gate: the lease the
 * handler runs under, and `alreadyDone()` to say the event was done elsewhere.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { alreadyDone, createGate, type DecisionEvent, type EventLease } from '../src/index.js';

function setup() {
  const store = new MemoryStore();
  const decisions: string[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    namespace: 'acme',
    doneTtlMs: 3_600_000,
    onDecision: (event: DecisionEvent) => decisions.push(event.decision),
  });
  return { store, gate, decisions };
}

describe('handler wrappers', () => {
  it('the handler sees its lease: the store key, the owner token, the done TTL', async () => {
    const { store, gate } = setup();
    let seen: EventLease | undefined;
    await gate.run({ payload: { id: 'evt_1' } }, async (event) => {
      seen = event.lease;
      // The token is the owner's: another one cannot complete the claim.
      expect(await store.done(event.lease!.key, 'someone-else', 1_000)).toBe(false);
    });
    expect(seen).toEqual({
      key: 'acme:evt:evt_1',
      token: expect.stringMatching(/^\d{16}$/),
      doneTtlMs: 3_600_000,
    });
  });

  it('a claim that was not acquired carries no lease', async () => {
    const { gate } = setup();
    const first = await gate.claim({ payload: { id: 'evt_1' } });
    const second = await gate.claim({ payload: { id: 'evt_1' } });
    expect(first.event.lease?.key).toBe('acme:evt:evt_1');
    expect(second.event.lease).toBeUndefined();
  });

  it('throw alreadyDone(): run resolves duplicate, records the event done, and reports duplicate', async () => {
    const { gate, decisions } = setup();
    let runs = 0;
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => {
      runs++;
      throw alreadyDone();
    });
    expect(outcome).toEqual({ status: 'duplicate', key: 'evt:evt_1' });
    expect((await gate.run({ payload: { id: 'evt_1' } }, () => runs++)).status).toBe('duplicate');
    expect(runs).toBe(1);
    expect(decisions).toEqual(['new', 'duplicate', 'duplicate']);
  });

  it('the signal is recognised by its brand, not by the identity of the function that made it', () => {
    const signal = alreadyDone();
    expect(signal).toBeInstanceOf(Error);
    expect(signal.name).toBe('AlreadyDone');
    expect(Object.getOwnPropertySymbols(signal).map(String)).toEqual([
      'Symbol(hookgate.alreadyDone)',
    ]);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  canonicalJson,
  createGate,
  type DecisionEvent,
  definePreset,
  type GateOptions,
  HookgateError,
  InvalidDeliveryError,
} from '../src/index.js';

function gateWith(options: Partial<GateOptions> = {}, store = new MemoryStore()) {
  const decisions: DecisionEvent[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    fingerprint: true,
    onDecision: (event) => decisions.push(event),
    ...options,
  });
  return { gate, store, decisions };
}

const sha256 = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex');

describe('the payload fingerprint', () => {
  it('a redelivery re-serialized (key order, whitespace, number forms) is a plain duplicate', async () => {
    const { gate } = gateWith();
    let runs = 0;
    const first = await gate.run(
      { rawBody: '{"id":"evt_1","amount":10,"tags":["a"]}' },
      () => ++runs,
    );
    const again = await gate.run(
      { rawBody: '{ "tags" : [ "a" ], "amount": 1.0e1, "id": "evt_1" }' },
      () => ++runs,
    );
    expect(first.status).toBe('processed');
    expect(again).toEqual({ status: 'duplicate', key: 'evt:evt_1' });
    expect(runs).toBe(1);
  });

  it('the same event id with another payload is a conflict: the handler does not run, and both fingerprints are reported', async () => {
    const { gate, decisions } = gateWith();
    const runs: unknown[] = [];
    const original = { id: 'evt_1', amount: 10 };
    const altered = { id: 'evt_1', amount: 99 };
    await gate.run({ payload: original }, (event) => runs.push(event.payload));
    expect(await gate.run({ payload: altered }, (event) => runs.push(event.payload))).toEqual({
      status: 'conflict',
      key: 'evt:evt_1',
    });
    expect(runs).toEqual([original]);
    expect(decisions.at(-1)).toMatchObject({
      decision: 'conflict',
      key: 'evt:evt_1',
      fingerprints: {
        stored: sha256(original).slice(0, 12),
        received: sha256(altered).slice(0, 12),
      },
    });
  });

  it('a conflict is decided against a record in flight too, not only a done one', async () => {
    const { gate } = gateWith();
    const first = await gate.claim({ payload: { id: 'evt_1', v: 1 } });
    expect(first.acquired).toBe(true);
    expect((await gate.claim({ payload: { id: 'evt_1', v: 2 } })).status).toBe('conflict');
    expect((await gate.claim({ payload: { id: 'evt_1', v: 1 } })).status).toBe('in-flight');
    await first.done();
    expect((await gate.claim({ payload: { id: 'evt_1', v: 2 } })).status).toBe('conflict');
  });

  it('a digest key stores no fingerprint: it is one already', async () => {
    const { gate, store } = gateWith({ eventId: undefined });
    const outcome = await gate.run({ payload: { grant: 'g1' } }, () => 1);
    expect(outcome.key).toMatch(/^dig:/);
    // A claim that brings a fingerprint finds none stored, so it cannot conflict.
    expect(await store.claim(`hookgate:${outcome.key}`, 'probe', 1000, 'f'.repeat(64))).toBe(
      'done',
    );
  });

  it('records written without a fingerprint never conflict', async () => {
    const store = new MemoryStore();
    const before = createGate({ store, eventId: 'id' });
    const after = createGate({ store, eventId: 'id', fingerprint: true });
    await before.run({ payload: { id: 'evt_1', v: 1 } }, () => 1);
    expect((await after.run({ payload: { id: 'evt_1', v: 2 } }, () => 1)).status).toBe('duplicate');
  });

  it('without the option nothing is compared: another payload is a duplicate', async () => {
    const { gate } = gateWith({ fingerprint: false });
    await gate.run({ payload: { id: 'evt_1', v: 1 } }, () => 1);
    expect((await gate.run({ payload: { id: 'evt_1', v: 2 } }, () => 1)).status).toBe('duplicate');
  });

  it('a preset can turn it on, and an explicit option wins over the preset', async () => {
    const acme = definePreset({ name: 'acme', eventId: 'id', fingerprint: true });
    const on = createGate({ store: new MemoryStore(), provider: acme });
    const off = createGate({ store: new MemoryStore(), provider: acme, fingerprint: false });
    for (const gate of [on, off]) await gate.run({ payload: { id: 'e', v: 1 } }, () => 1);
    expect((await on.run({ payload: { id: 'e', v: 2 } }, () => 1)).status).toBe('conflict');
    expect((await off.run({ payload: { id: 'e', v: 2 } }, () => 1)).status).toBe('duplicate');
    expect(() => definePreset({ name: 'x', fingerprint: 'yes' as never })).toThrow(HookgateError);
    expect(() => createGate({ store: new MemoryStore(), fingerprint: 1 as never })).toThrow(
      /`fingerprint`/,
    );
  });

  it('a payload that cannot be canonicalised is an invalid delivery (not-json)', async () => {
    const { gate } = gateWith();
    const error = await gate
      .run({ payload: { id: 'evt_1', when: new (class Odd {})() } }, () => 1)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidDeliveryError);
    expect(error).toMatchObject({ reason: 'not-json' });
  });

  it('a handler that outlived its claim still records its fingerprint with done', async () => {
    let now = 1_700_000_000_000;
    const store = new MemoryStore({ now: () => now });
    const { gate } = gateWith({ claimTtlMs: 1_000 }, store);
    await gate.run({ payload: { id: 'evt_1', v: 1 } }, () => {
      now += 5_000; // the claim expires while the handler runs; nobody takes the key
    });
    expect((await gate.run({ payload: { id: 'evt_1', v: 2 } }, () => 1)).status).toBe('conflict');
  });
});

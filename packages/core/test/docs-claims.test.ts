/**
 * Claims made by docs/options.md and docs/troubleshooting.md that no other test shows. Each
 * test names the page's claim it holds up.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  createGate,
  type DecisionEvent,
  definePreset,
  type GateOptions,
  HookgateError,
  InvalidDeliveryError,
  providers,
  StoreUnavailableError,
} from '../src/index.js';

function clock(start = 1_700_000_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const work = async () => 'ok';

describe('options.md: how options interact', () => {
  it('`name` names decisions without a provider; with one, the preset name is reported', async () => {
    const events: DecisionEvent[] = [];
    const onDecision = (e: DecisionEvent) => events.push(e);
    const named = createGate({ store: new MemoryStore(), eventId: 'id', name: 'acme', onDecision });
    await named.run({ payload: { id: 'a' } }, work);
    const both = createGate({
      store: new MemoryStore(),
      provider: definePreset({ name: 'preset', eventId: 'id' }),
      name: 'ignored',
      onDecision,
    });
    await both.run({ payload: { id: 'a' } }, work);
    expect(events.map((e) => e.provider)).toEqual(['acme', 'acme', 'preset', 'preset']);
  });

  it('a preset holds preset fields only: another gate option in it is refused, as `provider` or in definePreset', () => {
    const preset = { name: 'x', eventId: 'id', onFailure: 'retain' } as const;
    expect(() => definePreset(preset)).toThrow(/provider\.onFailure/);
    expect(() => createGate({ store: new MemoryStore(), provider: preset })).toThrow(
      /provider\.onFailure/,
    );
    // Spread, the same fields are plain gate options, and apply.
    expect(() => createGate({ store: new MemoryStore(), ...preset })).not.toThrow();
  });

  it('with the guard off, a subject or time that is missing, unparseable or whose selector throws is left out; with it on, the delivery is invalid', async () => {
    const throws = () => {
      throw new Error('no');
    };
    const off = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      subject: throws,
      occurredAt: 'at',
    });
    const outcome = await off.run({ payload: { id: 'a', at: 'not a time' } }, (event) => event);
    expect(outcome.status).toBe('processed');
    if (outcome.status !== 'processed') return;
    expect(outcome.result.subject).toBeUndefined();
    expect(outcome.result.occurredAt).toBeUndefined();

    const on = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      sequence: { subject: throws, occurredAt: 'at' },
    });
    const error = await on.run({ payload: { id: 'b', at: 1 } }, work).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidDeliveryError);
    expect((error as InvalidDeliveryError).reason).toBe('missing-subject');
  });

  it('the option checks named in the reference throw INVALID_OPTIONS when the gate is built', () => {
    const store = new MemoryStore();
    const bad: GateOptions[] = [
      { store, claimTtlMs: 30_000, heartbeat: { intervalMs: 30_000 } },
      { store, subject: 'grant', sequence: true }, // no occurredAt anywhere
      { store, sequence: { subject: 'grant', occurredAt: 'at', ties: 'first' as 'drop' } },
    ];
    for (const options of bad) {
      expect(() => createGate(options)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS' }),
      );
    }
    expect(() => createGate({ store, claimTtlMs: 3, heartbeat: true })).not.toThrow();
  });

  it('without an eventId and with digestFallback off, every delivery is invalid (missing-id)', async () => {
    const gate = createGate({ store: new MemoryStore(), digestFallback: false });
    const error = await gate.run({ payload: { id: 'a' } }, work).catch((e: unknown) => e);
    expect((error as InvalidDeliveryError).reason).toBe('missing-id');
  });

  it('gate.run does not split: a gate with split gates a whole body as one event', async () => {
    const gate = createGate({ store: new MemoryStore(), split: (p) => p as unknown[] });
    const body = [{ id: 1 }, { id: 2 }];
    const outcome = await gate.run({ payload: body }, (event) => event.payload);
    expect(outcome).toMatchObject({ status: 'processed', result: body });
    expect(outcome.key.startsWith('dig:')).toBe(true);
    expect(gate.split({ payload: body })).toHaveLength(2);
  });
});

describe("options.md: testing with MemoryStore's clock", () => {
  it('an orphaned claim is in flight until claimTtlMs passes; a done record lasts doneTtlMs', async () => {
    const time = clock();
    const store = new MemoryStore({ now: time.now });
    const gate = createGate({ store, eventId: 'id', claimTtlMs: 60_000, doneTtlMs: 3_600_000 });
    const delivery = { payload: { id: 'evt_1' } };

    const orphan = await gate.claim(delivery); // a worker that crashed: never settled
    expect(orphan.acquired).toBe(true);
    expect((await gate.run(delivery, work)).status).toBe('in-flight');
    expect(await gate.inspect({ id: 'evt_1' })).toEqual({
      key: 'evt:evt_1',
      state: 'processing',
      ttlMs: 60_000,
    });
    time.advance(60_000);
    expect((await gate.run(delivery, work)).status).toBe('processed');
    time.advance(3_600_000 - 1);
    expect((await gate.run(delivery, work)).status).toBe('duplicate');
    time.advance(1);
    expect((await gate.run(delivery, work)).status).toBe('processed');
  });

  it('size counts records not yet reclaimed; sweep() drops the expired ones, clear() all', async () => {
    const time = clock();
    const store = new MemoryStore({ now: time.now });
    const gate = createGate({ store, eventId: 'id', doneTtlMs: 1_000 });
    await gate.run({ payload: { id: 'a' } }, work);
    await gate.run({ payload: { id: 'b' } }, work);
    expect(store.size).toBe(2);
    time.advance(1_000);
    expect(store.size).toBe(2);
    store.sweep();
    expect(store.size).toBe(0);
    await gate.run({ payload: { id: 'c' } }, work);
    store.clear();
    expect(store.size).toBe(0);
    expect((await gate.run({ payload: { id: 'c' } }, work)).status).toBe('processed');
  });
});

describe('troubleshooting.md', () => {
  it('a key holding a value hookgate did not write: store-unavailable, "holds a value hookgate did not write"', async () => {
    const store = new MemoryStore();
    // A value that is not a claim record, under the claim key (here: a watermark).
    await store.advance('hookgate:evt:a', {
      at: 1,
      eventKey: 'x',
      token: 't',
      holdMs: 60_000,
      ttlMs: 60_000,
      ties: 'drop',
    });
    const events: DecisionEvent[] = [];
    const gate = createGate({ store, eventId: 'id', onDecision: (e) => events.push(e) });
    for (let i = 0; i < 2; i++) {
      const error = await gate.run({ payload: { id: 'a' } }, work).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/holds a value hookgate did not write/);
      expect((error as StoreUnavailableError).reason).toBe('foreign-value');
    }
    expect(events.map((e) => [e.decision, e.reason])).toEqual([
      ['store-unavailable', 'claim'],
      ['store-unavailable', 'claim'],
    ]);
  });

  it('digest keys merge identical bodies: two events with the same body and no id are one', async () => {
    const gate = createGate({ store: new MemoryStore() });
    const first = await gate.run({ payload: { amount: 5 } }, work);
    const second = await gate.run({ rawBody: '{ "amount": 5 }' }, work);
    expect(first.status).toBe('processed');
    expect(second).toEqual({ status: 'duplicate', key: first.key });
  });

  it('claim.extend(0) throws INVALID_OPTIONS', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    const claim = await gate.claim({ payload: { id: 'a' } });
    const error = await claim.extend(0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe('INVALID_OPTIONS');
  });
});

// options.md's Express 4 safety section: packages/express/test/async-handlers.test.ts runs both
// majors in a child process.

describe("presets.md: the built-in presets' table", () => {
  it("gives each preset's doneTtlMs as the preset has it, and lists every preset", () => {
    const page = readFileSync(new URL('../../../docs/presets.md', import.meta.url), 'utf8');
    const rows = [...page.matchAll(/^\| `providers\.(\w+)`.*\| (\d+) h\s+\|$/gm)];
    const listed = Object.fromEntries(rows.map(([, name, hours]) => [name, Number(hours)]));
    const actual = Object.fromEntries(
      Object.entries(providers).map(([name, preset]) => [
        name,
        (preset as { doneTtlMs?: number }).doneTtlMs! / 3_600_000,
      ]),
    );
    expect(listed).toEqual(actual);
  });
});

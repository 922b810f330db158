/**
 * One error builder: every hookgate error that names its owner reads `<owner>: <message>`, and
 * its class follows its code, so `instanceof` and `code` agree whoever built it.
 */
import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  createError,
  createGate,
  ErrorCode,
  foreignValueError,
  HookgateError,
  optionError,
  StoreUnavailableError,
  storeError,
} from '../src/index.js';

describe('createError', () => {
  it('prefixes the owner and picks the class by code', () => {
    const down = createError('MyStore', ErrorCode.STORE_UNAVAILABLE, 'claim failed: boom', {
      cause: 'boom',
    });
    expect(down).toBeInstanceOf(StoreUnavailableError);
    expect(down).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'MyStore: claim failed: boom',
      cause: 'boom',
    });
    const wrong = createError('@hookgate/express', ErrorCode.INVALID_OPTIONS, 'bad');
    expect(wrong).toBeInstanceOf(HookgateError);
    expect(wrong).not.toBeInstanceOf(StoreUnavailableError);
    expect(wrong.message).toBe('@hookgate/express: bad');
  });

  it('makes the helpers for store authors in the same format', () => {
    expect(optionError('MyStore', 'timeoutMs', 'must be positive').message).toBe(
      'MyStore: option `timeoutMs` must be positive',
    );
    const failed = storeError('MyStore', 'done', new Error('ECONNRESET'));
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    expect(failed.message).toBe('MyStore: done failed: ECONNRESET');
    const timedOut = storeError('MyStore', 'done', new DOMException('after 50 ms', 'TimeoutError'));
    expect(timedOut.message).toMatch(
      /^MyStore: done got no answer in time \(after 50 ms\); .*outcome is unknown$/,
    );
    expect(storeError('X', 'claim', failed)).toBe(failed);
    const foreign = foreignValueError('MyStore', 'claim', 'hookgate:evt:1');
    expect(foreign.message).toBe(
      'MyStore: claim: key hookgate:evt:1 holds a value hookgate did not write; left as it is',
    );
    // Named, so that an alert can tell it from an outage: it does not heal by itself.
    expect(foreign).toBeInstanceOf(StoreUnavailableError);
    expect(foreign.reason).toBe('foreign-value');
    expect(failed.reason).toBe('unavailable');
    expect(timedOut.reason).toBe('unavailable');
  });

  it('is what the gate, a store and an option check throw', async () => {
    expect(() => createGate({ store: new MemoryStore(), claimTtlMs: 0 })).toThrow(
      /^hookgate: option `claimTtlMs` must be a positive integer of milliseconds \(got 0\)$/,
    );
    const full = new MemoryStore({ maxEntries: 1 });
    await full.claim('a', 't1', 60_000);
    await expect(full.claim('b', 't2', 60_000)).rejects.toThrow(
      /^MemoryStore: is full \(maxEntries 1\) and no record has expired yet$/,
    );
    const down = new MemoryStore();
    down.claim = () => Promise.reject(new Error('down'));
    const gate = createGate({ store: down });
    await expect(gate.run({ payload: { id: 'evt_1' } }, async () => {})).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'hookgate: store claim failed: down',
    });
  });
});

describe('two copies of @hookgate/core in one process', () => {
  it('errors of the other copy pass instanceof, and its alreadyDone() is still a duplicate', async () => {
    const ours = await import('../src/index.js');
    // A second instance of every module of the package, as a second installed copy would be.
    vi.resetModules();
    const other = await import('../src/index.js');
    expect(other.StoreUnavailableError).not.toBe(ours.StoreUnavailableError);
    const lost = new other.LeaseLostError('hookgate:evt:a', 'done');
    expect(lost).toBeInstanceOf(ours.LeaseLostError);
    expect(lost).toBeInstanceOf(ours.HookgateError);
    expect(lost).not.toBeInstanceOf(ours.StoreUnavailableError);
    const down = new other.StoreUnavailableError('down');
    expect(down).toBeInstanceOf(ours.StoreUnavailableError);
    expect(down).not.toBeInstanceOf(ours.InvalidDeliveryError);
    const gate = ours.createGate({ store: new MemoryStore(), eventId: 'id' });
    const outcome = await gate.run({ payload: { id: 'evt_1' } }, () => {
      throw other.alreadyDone();
    });
    expect(outcome.status).toBe('duplicate');
  });
});

describe('a store that throws a HookgateError of another code', () => {
  it('rejects run with that error as it is, reported as store-unavailable, the handler not run (store.ts Errors)', async () => {
    const refusal = optionError('MyStore', 'claim', 'refused this key');
    const store = new MemoryStore();
    store.claim = () => Promise.reject(refusal);
    const decisions: { decision: string; reason?: string; error?: unknown }[] = [];
    const gate = createGate({ store, eventId: 'id', onDecision: (event) => decisions.push(event) });
    let ran = false;
    const error = await gate
      .run({ payload: { id: 'e1' } }, () => {
        ran = true;
      })
      .catch((caught: unknown) => caught);
    expect(error).toBe(refusal);
    expect(ran).toBe(false);
    expect(decisions).toMatchObject([
      { decision: 'store-unavailable', reason: 'claim', error: refusal },
    ]);
  });
});

/**
 * A model-based test of the gate: fast-check writes random scripts of deliveries (handlers that
 * succeed, fail or hang), store faults (a throw or a rejection of any operation, at any step)
 * and clock advances, runs them against a real MemoryStore on a fake clock, and checks after
 * every step the invariants the lease and the sequence guard promise:
 *
 * 1. never two handler runs of one key at once, unless the first one's claim had expired;
 * 2. no key held longer than `claimTtlMs` after its last settle attempt, or (while the handler
 *    runs on) after `heartbeat.maxMs`, or `claimTtlMs` after acquisition without a heartbeat;
 * 3. with the sequence guard on, the event times a subject's handlers applied (finished within
 *    their lease) never go backwards.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import { type ClaimStore, createGate, type GateOptions } from '../src/index.js';
import { answerOf } from '../src/store.js';

const CLAIM_TTL = 1_000;
const HEARTBEAT = { intervalMs: 300, maxMs: 3_000 };
const EVENTS = [
  { id: 'e0', subject: 's1', at: 1_000 },
  { id: 'e1', subject: 's1', at: 2_000 },
  { id: 'e2', subject: 's1', at: 3_000 },
  { id: 'e3', subject: 's2', at: 1_000 },
] as const;
const OPERATIONS = [
  'claim',
  'done',
  'release',
  'extend',
  'advance',
  'releaseHold',
  'extendHold',
] as const satisfies readonly (keyof ClaimStore)[];

const EXPIRED_TWICE_THEN_NEWER: Step[] = [
  { kind: 'deliver', event: 1, handler: 'hang', ms: 0 },
  { kind: 'tick', ms: 1_000 },
  { kind: 'deliver', event: 1, handler: 'hang', ms: 0 },
  { kind: 'tick', ms: 1_000 },
  { kind: 'deliver', event: 2, handler: 'hang', ms: 0 },
  { kind: 'unhang', index: 2 },
];

type Step =
  | { kind: 'deliver'; event: number; handler: 'ok' | 'fail' | 'hang'; ms: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'fault'; op: (typeof OPERATIONS)[number]; sync: boolean }
  | { kind: 'unhang'; index: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      event: fc.integer({ min: 0, max: EVENTS.length - 1 }),
      handler: fc.constantFrom('ok' as const, 'ok' as const, 'fail' as const, 'hang' as const),
      ms: fc.integer({ min: 0, max: 1_500 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('tick' as const),
      ms: fc.integer({ min: 1, max: 1_500 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      op: fc.constantFrom(...OPERATIONS),
      sync: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unhang' as const), index: fc.nat(5) }) },
);

/** What the wrapped store saw of each owner token. */
interface TokenLife {
  key: string;
  acquiredAt: number;
  settleAttemptAt?: number;
}

/**
 * A MemoryStore whose next call of an operation can be made to fail, and that records tokens.
 * With `atOnce`, it passes on the MemoryStore's answers, which the gate reads at once
 * (`answered`); without, every answer is an ordinary promise, as a networked store's is.
 */
class Instrumented implements ClaimStore {
  readonly inner = new MemoryStore();
  readonly armed = new Map<string, boolean>(); // op -> sync
  readonly tokens = new Map<string, TokenLife>();
  readonly #atOnce: boolean;

  constructor(atOnce: boolean) {
    this.#atOnce = atOnce;
  }

  #call<T>(op: string, run: () => Promise<T>): Promise<T> {
    const sync = this.armed.get(op);
    if (sync !== undefined) {
      this.armed.delete(op);
      const error = new Error(`injected ${op} failure`);
      if (sync) throw error;
      return Promise.reject(error);
    }
    const answer = run();
    return this.#atOnce ? answer : answer.then((value) => value);
  }

  claim(key: string, token: string, ttlMs: number) {
    return this.#call('claim', () => {
      const answer = this.inner.claim(key, token, ttlMs);
      if (answerOf(answer) === 'acquired' && !this.tokens.has(token)) {
        this.tokens.set(token, { key, acquiredAt: Date.now() });
      }
      return answer;
    });
  }
  done(key: string, token: string, ttlMs: number) {
    this.#settling(token);
    return this.#call('done', () => this.inner.done(key, token, ttlMs));
  }
  release(key: string, token: string) {
    this.#settling(token);
    return this.#call('release', () => this.inner.release(key, token));
  }
  extend(key: string, token: string, ttlMs: number) {
    return this.#call('extend', () => this.inner.extend(key, token, ttlMs));
  }
  advance(...args: Parameters<ClaimStore['advance']>) {
    return this.#call('advance', () => this.inner.advance(...args));
  }
  releaseHold(key: string, token: string) {
    return this.#call('releaseHold', () => this.inner.releaseHold(key, token));
  }
  extendHold(key: string, token: string, ttlMs: number) {
    return this.#call('extendHold', () => this.inner.extendHold(key, token, ttlMs));
  }

  #settling(token: string): void {
    const life = this.tokens.get(token);
    if (life !== undefined) life.settleAttemptAt ??= Date.now();
  }
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_750_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the gate against a model', () => {
  for (const [label, options, atOnce] of [
    ['heartbeat off, sequence guard on', { sequence: true }, false],
    ['heartbeat on, sequence guard on', { sequence: true, heartbeat: HEARTBEAT }, false],
    ['heartbeat on, sequence guard off', { heartbeat: HEARTBEAT }, false],
    [
      'heartbeat on, sequence guard on, answers read at once',
      { sequence: true, heartbeat: HEARTBEAT },
      true,
    ],
    ['heartbeat on, sequence guard off, answers read at once', { heartbeat: HEARTBEAT }, true],
  ] as const) {
    it(`keeps its invariants under random deliveries, faults and clock advances (${label})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
          await runScript(steps, options, atOnce);
        }),
        {
          numRuns: 200,
          // Found by a CI run: two hanging handlers of one key, ending in one turn after a
          // newer event of the subject applied (the harness's own probe once took the key).
          examples: [[EXPIRED_TWICE_THEN_NEWER]],
        },
      );
    });
  }
});

interface Run {
  event: (typeof EVENTS)[number];
  key: string;
  token: string | undefined;
  active: boolean;
}

async function runScript(
  steps: Step[],
  extra: Partial<GateOptions>,
  atOnce: boolean,
): Promise<void> {
  const store = new Instrumented(atOnce);
  const gate = createGate({
    store,
    eventId: 'id',
    subject: 'subject',
    occurredAt: 'at',
    claimTtlMs: CLAIM_TTL,
    ...extra,
  });
  const heartbeat = extra.heartbeat !== undefined;
  const sequenced = extra.sequence !== undefined;
  const runs: Run[] = [];
  const hanging: Array<() => void> = [];
  const applied = new Map<string, number[]>(); // subject -> times applied, in order
  const pending: Promise<unknown>[] = [];
  const failures: string[] = [];

  for (const s of steps) {
    if (s.kind === 'tick') await vi.advanceTimersByTimeAsync(s.ms);
    else if (s.kind === 'fault') store.armed.set(s.op, s.sync);
    else if (s.kind === 'unhang') hanging.splice(s.index % Math.max(1, hanging.length), 1)[0]?.();
    else {
      const event = EVENTS[s.event]!;
      const run: Run = { event, key: `hookgate:evt:${event.id}`, token: undefined, active: false };
      const delivery = { payload: { id: event.id, subject: event.subject, at: event.at } };
      const outcome = gate
        .run(delivery, async () => {
          // The claim this run holds: the one just acquired for its key.
          run.token = [...store.tokens].filter(([, life]) => life.key === run.key).at(-1)?.[0];
          // Invariant 1: another run of the key may be active only if its claim expired: the
          // gate never settles (releases) a claim while its handler runs.
          for (const other of runs) {
            if (other.active && other.key === run.key) {
              if (other.token === run.token) failures.push(`two runs of ${run.key} on one claim`);
              if (store.tokens.get(other.token!)?.settleAttemptAt !== undefined) {
                failures.push(`${run.key} was settled while its handler ran`);
              }
            }
          }
          run.active = true;
          try {
            if (s.handler === 'hang') await new Promise<void>((resolve) => hanging.push(resolve));
            else await new Promise((resolve) => setTimeout(resolve, s.ms));
            if (s.handler === 'fail') throw new Error('handler failed');
            // Invariant 3: applied within its lease, a subject's times never go backwards.
            if (sequenced && (await stillProcessing(store, run.key, run.token!))) {
              const times = applied.get(event.subject) ?? [];
              if (times.length > 0 && event.at < times.at(-1)!) {
                failures.push(`${event.subject} went back from ${times.at(-1)} to ${event.at}`);
              }
              times.push(event.at);
              applied.set(event.subject, times);
            }
          } finally {
            run.active = false;
          }
        })
        .catch(() => {});
      runs.push(run);
      pending.push(outcome);
      await vi.advanceTimersByTimeAsync(0);
    }
    await checkBounds();
  }
  // Run the clock past every bound while the hanging handlers still hang, then let them end.
  for (let elapsed = 0; elapsed < HEARTBEAT.maxMs + 2 * CLAIM_TTL; elapsed += 500) {
    await vi.advanceTimersByTimeAsync(500);
    await checkBounds();
  }
  for (const resolve of hanging.splice(0)) resolve();
  await vi.advanceTimersByTimeAsync(3 * CLAIM_TTL);
  await Promise.all(pending);
  await checkBounds();
  expect(failures).toEqual([]);

  /** Invariant 2: no processing record outlives its bound. */
  async function checkBounds(): Promise<void> {
    const now = Date.now();
    for (const [token, life] of store.tokens) {
      if (!(await stillProcessing(store, life.key, token))) continue;
      const from =
        life.settleAttemptAt ?? (heartbeat ? life.acquiredAt + HEARTBEAT.maxMs : life.acquiredAt);
      if (now >= from + CLAIM_TTL) {
        failures.push(
          `${life.key} held by ${token} at ${now - life.acquiredAt} ms after its claim`,
        );
      }
    }
    expect(failures).toEqual([]);
  }
}

/** Whether `key` holds `p:<token>` right now, read without changing anything. */
async function stillProcessing(store: Instrumented, key: string, token: string): Promise<boolean> {
  // `inspect`, not a probe claim: two handlers ending in one turn probed each other's key, and
  // a probe claim with the owner's token then took a key that had expired.
  const record = await store.inner.inspect(key);
  return record.kind === 'processing' && record.token === token;
}

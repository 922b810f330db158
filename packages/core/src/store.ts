/**
 * What `ClaimStore.claim` found.
 * - `acquired`: the key was absent; it now holds a `processing` record owned by the caller.
 * - `processing`: another owner's `processing` record is there (in flight elsewhere).
 * - `done`: a `done` record is there (the event was processed, or retained).
 * - a {@link ClaimConflict}: the live record, processing or done, carries another payload
 *   fingerprint than the caller's.
 */
export type ClaimState = 'acquired' | 'processing' | 'done' | ClaimConflict;

/** `ClaimStore.claim` found a record of the key whose payload fingerprint is another. */
export interface ClaimConflict {
  /** Tells a conflict from the other states. */
  readonly state: 'conflict';
  /** The fingerprint the live record carries. */
  readonly fingerprint: string;
}

/**
 * What `ClaimStore.advance` decided for one event of a subject.
 * - `applied`: the event is newer than the watermark; the watermark is now this event, and
 *   the subject is held for it.
 * - `stale`: not newer than the watermark (per `ties`); nothing changed.
 * - `held`: another event of the subject holds it (it is being processed); nothing changed.
 */
export type AdvanceState = 'applied' | 'stale' | 'held';

/** One event's step through the sequence guard, as `ClaimStore.advance` receives it. */
export interface AdvanceRequest {
  /** The event's time, epoch milliseconds (an integer; may be negative). */
  readonly at: number;
  /** The event's key (`evt:…`/`dig:…`), compared whole; it may contain `:`. */
  readonly eventKey: string;
  /** The owner token of the event's claim; it also owns the subject's hold. */
  readonly token: string;
  /** How long the hold lives unless released or extended, in ms (the claim's TTL). */
  readonly holdMs: number;
  /** How long the watermark lives after this advance, in ms. */
  readonly ttlMs: number;
  /** `'apply'` lets an event with the watermark's own time through; `'drop'` does not. */
  readonly ties: 'drop' | 'apply';
}

/**
 * What a store holds under one key, as `ClaimStore.inspect` reads it: nothing, a claim record
 * (`processing` or `done`, its owner token and fingerprint), or a subject's watermark (the
 * time and key of the newest event applied). `ttlMs` is the time the record has left, when it
 * expires.
 */
export type StoredRecord =
  | {
      /** Nothing under the key (or only an expired record). */
      readonly kind: 'absent';
    }
  | {
      /** A claim in flight, or the record of a processed event. */
      readonly kind: 'processing' | 'done';
      /** The owner token. */
      readonly token: string;
      /** The payload fingerprint, when the claim carried one. */
      readonly fingerprint?: string;
      /** The time the record has left, in ms. */
      readonly ttlMs?: number;
    }
  | {
      /** A subject's watermark. */
      readonly kind: 'watermark';
      /** The time of the newest event applied, epoch ms. */
      readonly at: number;
      /** The key of that event. */
      readonly eventKey: string;
      /** The time the record has left, in ms. */
      readonly ttlMs?: number;
    };

/**
 * The storage contract of the gate: a handful of single-key, atomic operations.
 *
 * Every key passed in is complete (namespace included) and safe to use as is: at most a few
 * hundred characters, no whitespace or control characters. Every operation touches exactly
 * one key, so a sharded store (Redis Cluster) needs no hash tags.
 *
 * **Claim records.** A record under a claim key is either `processing`, owned by a token, or
 * `done`, and may carry the payload's fingerprint (the gate's `fingerprint` option: a SHA-256
 * hex digest). The reference encoding, used by the Redis adapters so that an operator can read
 * a key with `redis-cli GET`, is the string `p:<token>` or `d:<token>`, followed by
 * `:<fingerprint>` when there is one; a done record of an all-digit token without a
 * fingerprint is the bare token (Redis keeps a number inside its object header: the compact
 * form, and the gate's tokens are numbers).
 *
 * **Owner.** Every claim is made with a random `token` (the gate's are 16 decimal digits; a
 * store must take any string of letters, digits and `-`).
 * `done`, `release` and `extend` compare the stored token with theirs and change the record in
 * the same atomic step only when they match: a worker whose claim expired must never complete,
 * extend or delete a claim that another worker holds now. A `false` from `done` or `release`
 * means another token's record (or, for `release`, a done record) is there and was left alone;
 * from `extend`, that too, or that nothing is there (the gate then claims the key back).
 *
 * **Time.** Every TTL is in milliseconds, a positive integer, counted from the moment the
 * store applies the operation, on the store's own clock. An expired record behaves exactly as
 * an absent one.
 *
 * **Foreign values.** A store never overwrites a value it did not write: an operation that
 * finds one rejects (with `StoreUnavailableError`) and leaves it as it is.
 *
 * **Errors.** A store throws (or rejects) when it cannot tell the outcome: unreachable, failed,
 * or no answer within its deadline. It should throw `StoreUnavailableError` (with the
 * underlying error as `cause`); the gate wraps anything else into one (a `HookgateError` of another code passes through as
 * it is, and is not retried in the background), and treats a method
 * that throws synchronously exactly like one that rejects. It must never resolve with a
 * guess: a timed-out `claim` may still have been applied by the server. An answer outside
 * these types (`'OK'` for a claim, `undefined` for a done, a conflict when no fingerprint was
 * sent) is taken as the store's failure, `StoreUnavailableError`, not read as a state.
 *
 * **Answering at once.** A store that needs no I/O to answer (MemoryStore) may return its
 * results made by {@link answered}: the gate reads such a result without waiting a turn of the
 * event loop, so a delivery it admits waits for nothing but its handler. Anyone else sees an
 * ordinary resolved promise.
 *
 * Run `@hookgate/store-conformance` against an implementation to prove it.
 */
export interface ClaimStore {
  /**
   * Atomically create a `processing` record owned by `token` with a TTL of `ttlMs`, if and only
   * if `key` has no live record (Redis: `SET key p:<token> NX PX ttlMs`). Of any number of
   * concurrent callers, exactly one gets `acquired`. A `processing` record already owned by
   * `token` also counts as `acquired` and is left as it is: a client may re-send a claim whose
   * reply was lost to a reconnect.
   *
   * With a `fingerprint`, the record created carries it, and a live record (processing or done)
   * that carries another one is a conflict. A record without a fingerprint, or a call without
   * one, never conflicts. The comparison is made on the record the same atomic step found (the
   * Redis adapters read it with `SET … NX GET`): it costs no extra round trip.
   * @returns `acquired` when the record was created; otherwise the state of the live record,
   * which is left untouched.
   */
  claim(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<ClaimState>;

  /**
   * Atomically record the event as done, with a TTL of `ttlMs`: turn the `processing` record
   * owned by `token` into a `done` record, or create that `done` record when the key is absent
   * (the claim expired, or was lost, while nobody else took the key: the work happened, and a
   * redelivery must find it done). Idempotent for its owner: a `done` record made by the same
   * token also counts as success, so a call retried after a timeout is not a false loss. The
   * done record carries `fingerprint` (the one the claim was made with), if given.
   * @returns `true` when the key now holds a `done` record by this token; `false`, changing
   * nothing, when it holds another token's record.
   */
  done(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<boolean>;

  /**
   * Atomically delete the `processing` record owned by `token`, so that the next delivery can
   * claim the key again.
   * @returns `true` when the key is now free of the caller's claim: deleted, or already absent
   * (which changes nothing); `false`, changing nothing, when it holds a `done` record or
   * another token's record.
   */
  release(key: string, token: string): Promise<boolean>;

  /**
   * Atomically reset the TTL of the `processing` record owned by `token` to `ttlMs`.
   * @returns `true` when extended; `false`, changing nothing, when the key is absent, `done`,
   * or another token's. (The gate tells an absent key from another owner by claiming it again
   * with the same token.)
   */
  extend(key: string, token: string, ttlMs: number): Promise<boolean>;

  /**
   * The sequence guard's admission of one event of a subject, in one atomic step. `key` holds
   * the subject's watermark: the time and key of the newest event applied, and, while that
   * event is processed, a hold owned by its claim's token.
   *
   * In order:
   * 1. Stale: when there is a watermark and `at` is earlier than it, or equal to it while
   *    `ties` is `'drop'` and `eventKey` is not the watermark's own event (the retry of an
   *    event whose handler failed is not stale to itself), the result is `stale`.
   * 2. Held: when a live hold is there for another event than `eventKey`, the result is
   *    `held`. (A hold of the same event, left by a worker whose claim expired, is taken over:
   *    the caller owns that event's claim now.)
   * 3. Otherwise the watermark becomes (`at`, `eventKey`) with a TTL of `ttlMs`, held by
   *    `token` for `holdMs`, and the result is `applied`.
   * `stale` and `held` change nothing.
   */
  advance(key: string, request: AdvanceRequest): Promise<AdvanceState>;

  /**
   * Atomically end the hold `token` has on the subject `key`, keeping the watermark and its TTL.
   * @returns `true` when the subject is now free of the caller's hold: ended, or not held by
   * anyone; `false`, changing nothing, when another token holds it.
   */
  releaseHold(key: string, token: string): Promise<boolean>;

  /**
   * Atomically reset the hold `token` has on the subject `key` to end `ttlMs` from now (the
   * heartbeat of a long handler keeps its subject held as it keeps its claim).
   * @returns `true` when extended; `false`, changing nothing, when the subject has no
   * watermark or another token holds it.
   */
  extendHold(key: string, token: string, ttlMs: number): Promise<boolean>;

  /**
   * Read the record under `key` (a claim or a watermark) without changing it: what `gate.inspect`
   * shows an operator. Optional in the interface so that stores written before it keep
   * compiling; every hookgate store implements it, and the conformance suite checks it.
   * @throws StoreUnavailableError when the key holds a value hookgate did not write.
   */
  inspect?(key: string): Promise<StoredRecord>;

  /**
   * Delete the record under `key`, whoever owns it, so that a deliberate replay runs again
   * (`gate.forget`). A value hookgate did not write is left as it is (and rejects). Optional
   * like `inspect`.
   * @returns `true` when a record was deleted; `false` when the key was absent.
   */
  forget?(key: string): Promise<boolean>;
}

/** Where {@link answered} keeps a promise's value, on the promise itself. */
const ANSWER = Symbol('hookgate.answer');

/**
 * A promise resolved with `value` that the gate can read at once: what a {@link ClaimStore}
 * that answers without I/O returns, so that `gate.run` goes on in the same turn instead of
 * waiting for the promise (a store's constant answers can be made once and returned again:
 * a resolved promise never changes). To anyone else it is `Promise.resolve(value)`.
 */
export function answered<T>(value: T): Promise<T> {
  const promise = Promise.resolve(value) as Promise<T> & { [ANSWER]?: T };
  promise[ANSWER] = value;
  return promise;
}

/**
 * The value of a promise made by {@link answered}, else `undefined` (for any other promise, or
 * one answered with `undefined`): what the gate, and a binding reading {@link admit}'s
 * promise, use to go on in the same turn instead of awaiting. Kept as a property of the
 * promise rather than in a `WeakMap`: reading a missing property of an ordinary promise costs
 * next to nothing, where a `WeakMap` lookup cost every delivery on a networked store about
 * 0.03 µs.
 *
 * @example
 * const admitting = admit(options, body, headers);
 * const { answer, claim } = answerOf(admitting) ?? (await admitting);
 */
export function answerOf<T>(promise: Promise<T>): T | undefined {
  return (promise as { [ANSWER]?: T } | undefined)?.[ANSWER];
}

/**
 * What `ClaimStore.claim` found.
 * - `acquired`: the key was absent; it now holds a `processing` record owned by the caller.
 * - `processing`: another owner's `processing` record is there (in flight elsewhere).
 * - `done`: a `done` record is there (the event was processed, or retained).
 */
export type ClaimState = 'acquired' | 'processing' | 'done';

/**
 * The storage contract of the gate: a handful of single-key, atomic operations.
 *
 * Every key passed in is complete (namespace included) and safe to use as is: at most a few
 * hundred characters, no whitespace or control characters. Every operation touches exactly
 * one key, so a sharded store (Redis Cluster) needs no hash tags.
 *
 * A record under a claim key is either `processing`, owned by a token, or `done`. The
 * reference encoding, used by the Redis adapters so that an operator can read a key with
 * `redis-cli GET`, is the string `p:<token>` or `d:<token>`.
 *
 * **Owner.** Every claim is made with a random `token` (a UUID). `done`, `release` and
 * `extend` compare the stored token with theirs and change the record in the same atomic
 * step only when they match: a worker whose claim expired must never complete, extend or
 * delete a claim that another worker holds now.
 *
 * **Time.** Every TTL is in milliseconds, a positive integer, counted from the moment the
 * store applies the operation. An expired record behaves exactly as an absent one.
 *
 * **Errors.** A store throws (or rejects) when it cannot tell the outcome: unreachable, failed,
 * or no answer within its deadline. It should throw `StoreUnavailableError` (with the
 * underlying error as `cause`); the gate wraps anything else into one. It must never resolve
 * with a guess: a timed-out `claim` may still have been applied by the server.
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
   * @returns `acquired` when the record was created; otherwise the state of the live record,
   * which is left untouched.
   */
  claim(key: string, token: string, ttlMs: number): Promise<ClaimState>;

  /**
   * Atomically turn the `processing` record owned by `token` into a `done` record with a TTL
   * of `ttlMs`. Idempotent for its owner: a `done` record made by the same token also counts
   * as success, so a call retried after a timeout does not report a false loss.
   * @returns `true` when the record is now `done` by this token; `false`, changing nothing,
   * when the key is absent or belongs to another token.
   */
  done(key: string, token: string, ttlMs: number): Promise<boolean>;

  /**
   * Atomically delete the `processing` record owned by `token`, so that the next delivery can
   * claim the key again.
   * @returns `true` when it was deleted; `false`, changing nothing, when the key is absent,
   * `done`, or belongs to another token.
   */
  release(key: string, token: string): Promise<boolean>;

  /**
   * Atomically reset the TTL of the `processing` record owned by `token` to `ttlMs`.
   * @returns `true` when extended; `false`, changing nothing, when the key is absent, `done`,
   * or belongs to another token.
   */
  extend(key: string, token: string, ttlMs: number): Promise<boolean>;

  /**
   * The sequence guard's compare-and-advance, in one atomic step. `key` holds a subject's
   * watermark: the time `at` (epoch milliseconds, an integer) of the newest event applied, and
   * that event's key `eventKey`.
   *
   * The event is applied, and the watermark set to (`at`, `eventKey`) with a TTL of `ttlMs`,
   * when there is no watermark, when `at` is later than it, or when `at` equals it and either
   * `eventKey` is the one stored (the retry of an event whose handler failed is not stale to
   * itself) or `ties` is `'apply'`. Otherwise the watermark is left untouched.
   * @returns `true` when the event is applied, `false` when it is stale.
   */
  advance(
    key: string,
    at: number,
    eventKey: string,
    ttlMs: number,
    ties: 'drop' | 'apply',
  ): Promise<boolean>;
}

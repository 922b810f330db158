/** The `Claim` handle that `gate.claim` gives: a view of its lease, or inert when refused. */
import { positiveMs } from './gate-options.js';
import type { Lease } from './lease.js';
import type { KeySource, WebhookEvent } from './types.js';

/** The low-level handle of one claim attempt, as `gate.claim` returns it. */
export interface Claim<TPayload = unknown> {
  /**
   * `acquired`: the caller owns the claim and must settle it with `done()` or `fail()`.
   * `duplicate`, `in-flight`, `stale`, `conflict`: nothing to do; settling is a no-op.
   */
  readonly status: 'acquired' | 'duplicate' | 'in-flight' | 'stale' | 'conflict';
  /** `status === 'acquired'`. */
  readonly acquired: boolean;
  /** The idempotency key (without the namespace). */
  readonly key: string;
  /** How `key` was derived: the provider's event id, or a digest of the payload. */
  readonly source: KeySource;
  /** The event, as the handler sees it. */
  readonly event: WebhookEvent<TPayload>;
  /**
   * Mark the event done for `doneTtlMs`; a store failure is tried once more before it
   * rejects. The first settle attempt (this, `release` or `fail`) stops the heartbeat. Once
   * settled, settling again does nothing.
   * @throws LeaseLostError when another owner holds the key (the claim expired and was taken).
   * @throws StoreUnavailableError when the store failed twice; the done is then tried again in
   * the background (pauses of 100 ms growing to an eighth of `claimTtlMs`, at most 5 s) for
   * `claimTtlMs` after the failure, by when the claim has expired if none landed.
   */
  done(): Promise<void>;
  /**
   * Delete the claim so that the next delivery redoes the work (whatever `onFailure` says).
   * After a `done()` that failed, the done may have landed all the same (a timeout after the
   * store applied it): then, over a store with `inspect` (every shipped one), the event stays
   * done and this does nothing; a store without it cannot tell, and this rejects with
   * `LeaseLostError`.
   * @throws LeaseLostError when another owner holds the key (nothing was deleted).
   * @throws StoreUnavailableError when the store failed; the release is then tried again in the
   * background for `claimTtlMs` after the failure, by when the claim has expired if none
   * landed.
   */
  release(): Promise<void>;
  /**
   * Settle a failed attempt as `onFailure` says: release, or retain as done.
   * @throws LeaseLostError when another owner holds the key.
   * @throws StoreUnavailableError when the store failed; tried again in the background, as
   * `release` and `done` are.
   */
  fail(error?: unknown): Promise<void>;
  /**
   * Reset the claim's TTL to `ms` (default `claimTtlMs`). A claim that expired while nobody
   * else took the key is taken back. Does nothing once a settle was attempted; nor, under the
   * sequence guard, when another event took the subject's hold after this claim's expired
   * (the claim is left to expire: the other event runs now).
   * @throws LeaseLostError when another owner holds the key.
   * @throws StoreUnavailableError when the store failed (reported; the claim is not lost).
   * @throws HookgateError `INVALID_OPTIONS` when `ms` is not a positive integer.
   */
  extend(ms?: number): Promise<void>;
}

/** The claims refused because another event of their subject holds it (sequence guard). */
const held = new WeakSet<Claim<unknown>>();

/**
 * @internal Whether an `in-flight` claim is a different event waiting for its subject (the
 * sequence guard's hold), rather than the same event in flight elsewhere. Nobody else will
 * process it, so a binding answers it 409 even with `inFlight: 'ack'`.
 */
export function heldBack(claim: Claim<unknown>): boolean {
  return held.has(claim);
}

const settled = Promise.resolve();

/**
 * @internal The public face of a claim attempt: a view of its lease when acquired, inert
 * otherwise.
 */
export class ClaimHandle<TPayload> implements Claim<TPayload> {
  readonly status: Claim['status'];
  readonly acquired: boolean;
  readonly key: string;
  readonly source: KeySource;
  readonly event: WebhookEvent<TPayload>;
  readonly #lease: Lease<TPayload> | undefined;
  readonly #claimTtlMs: number;

  constructor(
    status: Claim['status'] | 'held',
    event: WebhookEvent<TPayload>,
    lease: Lease<TPayload> | undefined,
    claimTtlMs: number,
  ) {
    this.status = status === 'held' ? 'in-flight' : status;
    if (status === 'held') held.add(this);
    this.acquired = lease !== undefined;
    this.event = event;
    this.key = event.key;
    this.source = event.source;
    this.#lease = lease;
    this.#claimTtlMs = claimTtlMs;
  }

  done(): Promise<void> {
    return this.#lease?.done() ?? settled;
  }

  release(): Promise<void> {
    return this.#lease?.release() ?? settled;
  }

  fail(error?: unknown): Promise<void> {
    return this.#lease?.fail(error) ?? settled;
  }

  async extend(ms?: number): Promise<void> {
    const ttlMs = ms === undefined ? this.#claimTtlMs : positiveMs('ms', ms, 0);
    await this.#lease?.extend(ttlMs);
  }
}

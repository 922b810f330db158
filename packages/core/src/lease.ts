import type { Report } from './decisions.js';
import {
  booleanAnswer,
  type HookgateError,
  LeaseLostError,
  StoreUnavailableError,
  toStoreError,
} from './errors.js';
import type { ResolvedGateOptions } from './gate-options.js';
import type { Prepared } from './prepare.js';
import { answerOf } from './store.js';

/** @internal What a lease needs from its gate: the store, the TTLs, and where to report. */
export type LeaseHost = Pick<
  ResolvedGateOptions,
  'store' | 'claimTtlMs' | 'doneTtlMs' | 'retain' | 'heartbeat'
> & {
  readonly report: Report;
  /** Whether anyone listens to `report` (details are not built otherwise). */
  readonly reporting: boolean;
};

type Operation = 'done' | 'release' | 'extend';
/** How a settle is reported: `duplicate` is a done for an event done elsewhere. */
type Settle = 'done' | 'duplicate' | 'released' | 'retained';

/**
 * - `held`: acquired, no settle attempted yet; the heartbeat (if any) runs.
 * - `settling`: a settle was attempted and met a store failure; it may be tried again, nothing
 *   extends the claim any more, so it expires `claimTtlMs` after its last extension.
 * - `settled`: done, released or retained. Later settles are no-ops.
 * - `lost`: another owner holds the key. Every later call rejects with `LeaseLostError`.
 */
type Phase = 'held' | 'settling' | 'settled' | 'lost';

const settledPromise = Promise.resolve();

/**
 * @internal The one owner of an acquired claim, from acquisition to settlement: its token, its
 * heartbeat, the subject's hold under the sequence guard, whether it is settled and whether it
 * was lost. `gate.run`, the `Claim` handle and the bindings all settle through it.
 *
 * Rules it keeps (DESIGN.md, "The lease has one owner"):
 * - the first settle attempt ends the heartbeat, whether or not the store call succeeds;
 * - the heartbeat stops `heartbeat.maxMs` after acquisition;
 * - a store call that throws synchronously is a rejection (every call is awaited in a `try`);
 * - the lease is lost only when another owner holds the key, `lease-lost` is reported once,
 *   never after a successful settle, and every call after it rejects with `LeaseLostError`.
 */
export class Lease<TPayload = unknown> {
  readonly #host: LeaseHost;
  readonly #prepared: Prepared<TPayload>;
  readonly #token: string;
  readonly #acquiredAt: number;
  #phase: Phase = 'held';
  #heartbeat: Heartbeat | undefined;
  /** Whether a settle is in flight; later ones wait in `#waiting`. */
  #settling = false;
  #waiting: Array<() => void> | undefined;
  /** Whether the subject's hold (sequence guard) still needs releasing. */
  #holding: boolean;

  constructor(host: LeaseHost, prepared: Prepared<TPayload>, token: string) {
    this.#host = host;
    this.#prepared = prepared;
    this.#token = token;
    // The clock is read only for what needs it: the heartbeat's bound and reported durations.
    this.#acquiredAt = host.reporting || host.heartbeat !== undefined ? Date.now() : 0;
    this.#holding = prepared.subjectKey !== undefined;
    const { heartbeat } = host;
    if (heartbeat !== undefined) {
      this.#heartbeat = new Heartbeat(
        heartbeat.intervalMs,
        this.#acquiredAt + heartbeat.maxMs,
        () => this.#beat(),
      );
    }
  }

  /**
   * Record the event as done for `doneTtlMs`. A store failure is tried once more (done is
   * idempotent for its owner) before it rejects.
   * @throws LeaseLostError when another owner holds the key.
   * @throws StoreUnavailableError when both attempts failed; the claim then expires.
   */
  done(): Promise<void> {
    return this.doneNow() ?? settledPromise;
  }

  /**
   * {@link done}, or `undefined` when it settled at once: the store {@link answered} `true`, and
   * no subject's hold is left to release. `gate.run` then has nothing to await.
   */
  doneNow(): Promise<void> | undefined {
    if (this.#settling || this.#phase !== 'held') return this.#settle('done', undefined, 2);
    this.#begin();
    let first: Promise<boolean>;
    try {
      first = this.#call('done');
    } catch (error) {
      first = Promise.reject(error);
    }
    if (answerOf(first) === true && !this.#holding) {
      this.#settled('done', undefined);
      this.#endTurn();
      return undefined;
    }
    return this.#attempt('done', undefined, 2, false, first);
  }

  /**
   * Record as done an event that was done elsewhere (a handler wrapper's ledger): the same as
   * {@link done}, reported as `duplicate`.
   */
  doneElsewhere(): Promise<void> {
    return this.#settle('duplicate', undefined, 2);
  }

  /**
   * Delete the claim so that the next delivery redoes the work; a no-op when a done of this
   * lease landed though its answer was lost (see {@link #attempt}).
   */
  release(cause?: unknown): Promise<void> {
    return this.#settle('released', cause, 1);
  }

  /** Settle a failed attempt as `onFailure` says: release, or retain as done. */
  fail(cause: unknown): Promise<void> {
    return this.#settle(this.#host.retain ? 'retained' : 'released', cause, 1);
  }

  /**
   * Reset the claim's TTL to `ms` (and the subject's hold with it). A claim that expired while
   * nobody else took the key is taken back. After a settle attempt this does nothing: a claim
   * whose settle failed must expire. So does a claim whose subject's hold another event took
   * (it is left to expire).
   * @throws LeaseLostError when another owner holds the key (also when it took the hold).
   */
  async extend(ms: number): Promise<void> {
    if (this.#phase === 'lost') throw this.#lostError('extend');
    if (this.#phase !== 'held') return;
    await this.#keep(ms);
  }

  /**
   * Settle the claim, trying a store failure up to `attempts` times. Settles run one at a time:
   * a second one waits for the first, then sees its result (a release racing a done that won is
   * a no-op, not a lost lease). When every attempt met a store failure, the settle goes on in
   * the background (see {@link #later}) and the caller gets the failure now.
   *
   * Not `async` itself: the checks run at once, and only the store call waits (an async
   * function's frame is allocated per call, and this one's would be the largest of a delivery).
   */
  #settle(decision: Settle, cause: unknown, attempts: number, background = false): Promise<void> {
    if (this.#settling) return this.#settleAfterTurn(decision, cause, attempts, background);
    if (this.#phase === 'lost') {
      return Promise.reject(this.#lostError(decision === 'released' ? 'release' : 'done'));
    }
    if (this.#phase === 'settled') return settledPromise;
    this.#begin();
    return this.#attempt(decision, cause, attempts, background);
  }

  /** A settle begins: it is the first attempt, which ends the heartbeat. */
  #begin(): void {
    this.#phase = 'settling';
    this.#settling = true;
    this.#heartbeat?.stop();
  }

  /** A settle that came while another was in flight: it runs after that one. */
  async #settleAfterTurn(
    decision: Settle,
    cause: unknown,
    attempts: number,
    background: boolean,
  ): Promise<void> {
    while (this.#settling) await this.#turn();
    return this.#settle(decision, cause, attempts, background);
  }

  /**
   * The store calls of a settle begun by {@link #begin}; `first`, when given, is the first
   * attempt's call, already made.
   */
  async #attempt(
    decision: Settle,
    cause: unknown,
    attempts: number,
    background: boolean,
    first?: Promise<boolean>,
  ): Promise<void> {
    const operation = decision === 'released' ? 'release' : 'done';
    try {
      for (let attempt = 1; ; attempt++) {
        let owned: boolean;
        try {
          owned = booleanAnswer(
            operation,
            await (attempt === 1 && first !== undefined ? first : this.#call(operation)),
          );
          if (!owned && operation === 'release' && (await this.#ownDone())) {
            // The key holds this lease's own done record: a done whose answer was lost (a
            // timeout after the server applied it) had landed. The event is done, and this
            // release is a no-op, as one that raced a done that won. (A read that fails fails
            // the release: its outcome is unknown.)
            this.#settled('done', undefined);
            return;
          }
        } catch (error) {
          const failure = toStoreError(error, operation);
          if (!(failure instanceof StoreUnavailableError)) throw failure;
          if (attempt < attempts) continue;
          // Reported once per settle; a background retry fails quietly (this was reported).
          if (!background) {
            this.#reportFailure(failure, operation);
            this.#later(decision, cause);
          }
          throw failure;
        }
        if (!owned) throw this.#lose(operation);
        this.#settled(decision, cause);
        return;
      }
    } finally {
      try {
        if (this.#holding) await this.#releaseHold();
      } finally {
        this.#endTurn(); // whatever the hold's release did: no settle may wait behind this one
      }
    }
  }

  /** The settle's store call. */
  #call(operation: 'done' | 'release'): Promise<boolean> {
    const { store } = this.#host;
    const { claimKey } = this.#prepared;
    return operation === 'release'
      ? store.release(claimKey, this.#token)
      : store.done(claimKey, this.#token, this.#host.doneTtlMs, this.#prepared.fingerprint);
  }

  /**
   * Whether the key holds this lease's own done record. Read, never written: between a refused
   * release and this read, another owner's claim may have gone, and a done written now would
   * record an event nobody finished. A store without `inspect` cannot tell: not ours.
   */
  async #ownDone(): Promise<boolean> {
    const record = await this.#host.store.inspect?.(this.#prepared.claimKey);
    return record?.kind === 'done' && record.token === this.#token;
  }

  #settled(decision: Settle, cause: unknown): void {
    this.#phase = 'settled';
    if (this.#host.reporting) {
      const durationMs = Date.now() - this.#acquiredAt;
      const detail = cause === undefined ? { durationMs } : { durationMs, error: cause };
      this.#host.report(decision, this.#prepared.event, detail);
    }
  }

  /** The settle in flight has finished: let the next one in. */
  #endTurn(): void {
    this.#settling = false;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) for (const resume of waiting) resume();
  }

  /**
   * Keep trying a settle the store failed, in the background, with a growing pause (100 ms up
   * to an eighth of `claimTtlMs`, at most 5 s), until the claim would have expired
   * (`claimTtlMs` from now). Until then the claim keeps redeliveries out, so a done that lands
   * in time still spares the event a second run (a store that came back, a connection that was
   * replaced); a release that lands in time lets the redelivery in sooner. The pause stays
   * short beside the claim's life, so that a store back before the claim expires is tried
   * before it does. It stops as soon as the lease is settled or lost otherwise.
   */
  #later(decision: Settle, cause: unknown): void {
    const { claimTtlMs } = this.#host;
    const until = Date.now() + claimTtlMs;
    const longest = Math.max(100, Math.min(5_000, claimTtlMs / 8));
    let pause = 100;
    const retry = () => {
      if (this.#phase !== 'settling') return;
      this.#settle(decision, cause, 1, true).catch((error: unknown) => {
        pause = Math.min(pause * 2, longest);
        if (error instanceof StoreUnavailableError && Date.now() + pause < until) schedule();
      });
    };
    const schedule = () => {
      const timer = setTimeout(retry, pause);
      (timer as { unref?: () => void }).unref?.();
    };
    schedule();
  }

  /** Resolves when the settle in flight has finished. */
  #turn(): Promise<void> {
    const waiting = this.#waiting ?? [];
    this.#waiting = waiting;
    return new Promise((resolve) => waiting.push(resolve));
  }

  /** One heartbeat: keep the claim for another `claimTtlMs`. A store failure is a missed beat. */
  async #beat(): Promise<void> {
    try {
      await this.#keep(this.#host.claimTtlMs);
    } catch {
      // A lost lease has been reported and has stopped the heartbeat; a store failure (also
      // reported) is retried on the next beat, and the claim outlives a few missed ones.
    }
  }

  /**
   * Extend the claim and the subject's hold; take the claim back when it expired and nobody
   * else holds the key. The hold goes first and the claim only follows it, so that the claim
   * never outlives the hold: a subject whose hold could not be kept lets its claim expire too.
   */
  async #keep(ms: number): Promise<void> {
    const { store } = this.#host;
    const { claimKey, subjectKey } = this.#prepared;
    let owned: boolean;
    try {
      if (
        subjectKey !== undefined &&
        !booleanAnswer('extendHold', await store.extendHold(subjectKey, this.#token, ms))
      ) {
        // Another owner holds the subject: it saw ours expire. Let the claim expire as well,
        // extending nothing more; lost when that owner took this very event's key (a
        // redelivery), as without the sequence guard.
        this.#heartbeat?.stop();
        owned = !(await this.#takenOver());
      } else {
        owned =
          booleanAnswer('extend', await store.extend(claimKey, this.#token, ms)) ||
          (this.#phase === 'held' &&
            (await store.claim(claimKey, this.#token, ms, this.#prepared.fingerprint)) ===
              'acquired');
      }
    } catch (error) {
      throw this.#storeFailed(error, 'extend');
    }
    // A settle started meanwhile (a reply that crossed it): the settle's result counts.
    if (this.#phase !== 'held') return;
    if (!owned) throw this.#lose('extend');
  }

  /**
   * Whether another owner's claim or done record is under the key. Read, never written. A
   * store without `inspect` cannot tell: not taken.
   */
  async #takenOver(): Promise<boolean> {
    const record = await this.#host.store.inspect?.(this.#prepared.claimKey);
    return (
      (record?.kind === 'processing' || record?.kind === 'done') && record.token !== this.#token
    );
  }

  async #releaseHold(): Promise<void> {
    this.#holding = false;
    try {
      await this.#host.store.releaseHold(this.#prepared.subjectKey!, this.#token);
    } catch (error) {
      // The hold then expires with the claim's TTL; nothing else to do.
      this.#storeFailed(error, 'releaseHold');
    }
  }

  /** The claim belongs to another owner now: report it once, and refuse everything after. */
  #lose(operation: Operation): LeaseLostError {
    const error = this.#lostError(operation);
    if (this.#phase !== 'lost') {
      this.#phase = 'lost';
      this.#heartbeat?.stop();
      this.#host.report('lease-lost', this.#prepared.event, { error });
    }
    return error;
  }

  #lostError(operation: Operation): LeaseLostError {
    return new LeaseLostError(this.#prepared.claimKey, operation);
  }

  #storeFailed(error: unknown, operation: string): HookgateError {
    const failure = toStoreError(error, operation);
    this.#reportFailure(failure, operation);
    return failure;
  }

  /** `store-unavailable`, its `reason` the store operation that failed after the claim. */
  #reportFailure(failure: HookgateError, operation: string): void {
    this.#host.report('store-unavailable', this.#prepared.event, {
      reason: operation,
      error: failure,
    });
  }
}

/**
 * Calls `beat` every `intervalMs`, never two at once, until stopped or until the clock passes
 * `untilMs`. `beat` handles its own failures.
 */
class Heartbeat {
  #timer: ReturnType<typeof setInterval> | undefined;
  #beating = false;

  constructor(
    intervalMs: number,
    readonly untilMs: number,
    readonly beat: () => Promise<void>,
  ) {
    this.#timer = setInterval(() => this.#tick(), intervalMs);
    // A heartbeat never keeps the process alive on its own.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    if (Date.now() >= this.untilMs) {
      this.stop();
      return;
    }
    if (this.#beating) return;
    this.#beating = true;
    this.beat().then(() => {
      this.#beating = false;
    });
  }
}

import { mapConcurrently } from './batch.js';
import { type Claim, ClaimHandle } from './claim.js';
import { createReporter, type Report, registerReporter } from './decisions.js';
import {
  InvalidDeliveryError,
  invalidOption,
  isAlreadyDone,
  StoreUnavailableError,
  toStoreError,
  unreadableAnswer,
} from './errors.js';
import { type GateOptions, type ResolvedGateOptions, resolveGateOptions } from './gate-options.js';
import { type EventTarget, forgetEvent, type Inspection, inspectEvent } from './inspect.js';
import { payloadOf, unreadable } from './key.js';
import { Lease, type LeaseHost } from './lease.js';
import { type Prepared, prepareDelivery } from './prepare.js';
import { advanceSubject } from './sequence.js';
import { answered, answerOf, type ClaimConflict, type ClaimState } from './store.js';
import { ownerToken } from './token.js';
import type { BatchResult, Delivery, Outcome, WebhookEvent } from './types.js';

/** The handler `gate.run` calls for a new event. */
export type Handler<TPayload, TResult> = (
  event: WebhookEvent<TPayload>,
  delivery: Delivery,
) => TResult | PromiseLike<TResult>;

/** A configured gate; build one with {@link createGate} and share it. */
export interface Gate<TPayload = unknown> {
  /** The namespace every store key starts with. */
  readonly namespace: string;
  /**
   * Claim the delivery, run `handler` if it is a new event, then mark it done, or release it
   * (per `onFailure`) when the handler throws.
   * @returns `processed` with the handler's result, or `duplicate`, `in-flight`, `stale` or
   * `conflict`.
   * A handler (or a wrapper such as `@hookgate/pg`'s ledger) that throws
   * {@link alreadyDone}`()` makes `run` record the event done and resolve `duplicate`.
   * @throws the handler's error, after the claim was released (or retained).
   * @throws InvalidDeliveryError when the delivery cannot be keyed; nothing was claimed.
   * @throws StoreUnavailableError when the store failed; the handler did not run. (A store that
   * throws a `HookgateError` of another code rejects `run` with that error, as it is.)
   * @throws LeaseLostError when the handler finished after its claim expired and another
   * worker took the key (a handler that outlived its claim while nobody else took the key
   * still records done).
   *
   * When the handler succeeded but the store fails to record it as done (twice), `run` still
   * resolves `processed` — the work happened — and reports `store-unavailable`; the done is
   * tried again in the background for `claimTtlMs` after the failure, and if none lands, a
   * later redelivery runs again (see the guarantees doc).
   */
  run<TResult>(
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>>;
  /**
   * The low-level step `run` is made of: key the delivery, claim it and apply the sequence
   * guard. When the result is `acquired`, the caller owns the claim and must settle it.
   * When the store answered at once (see {@link answered}), so is this promise read at once,
   * except for an acquired claim under the sequence guard (its subject is advanced first).
   * @throws InvalidDeliveryError, StoreUnavailableError, as `run`.
   */
  claim(delivery: Delivery): Promise<Claim<TPayload>>;
  /**
   * `run` over many deliveries (a queue's batch, or the events {@link Gate.split} found in one
   * body), at most `concurrency` handlers at a time. Resolves one result per delivery, in
   * order: its {@link Outcome}, or `{ status: 'failed', error }` for a handler error (its claim
   * released or retained as `onFailure` says), an invalid delivery or a store failure (nothing
   * claimed, or the claim released), or a lost lease. It rejects
   * only on a bad `concurrency`. {@link sqsBatchResponse} turns the results into an SQS
   * partial batch response.
   */
  runBatch<TResult>(
    deliveries: readonly Delivery[],
    handler: Handler<TPayload, TResult>,
    options?: BatchOptions,
  ): Promise<BatchResult<Awaited<TResult>>[]>;
  /**
   * The events of one delivery, as deliveries: `[delivery]` for a gate without `split`;
   * with one, a delivery per event of the parsed body (its `payload` the event, its `headers`
   * the body's).
   * @throws InvalidDeliveryError `not-json` when the body is not JSON or `split` does not give
   * an array.
   */
  split(delivery: Delivery): Delivery[];
  /** Whether the gate has a `split`: its bodies carry many events, and the bindings claim each. */
  readonly batched: boolean;
  /**
   * What the store holds for an event: `absent`, `processing` (a claim in flight, and how long
   * it has left) or `done` (and how long the record lives), its payload fingerprint if it has
   * one, and, for a delivery of a gate with the sequence guard, its subject's watermark.
   * @param target - a delivery (keyed as `run` keys it), `{ id }` (a provider event id, keyed
   * as the gate keys ids, hashing included), or the event key as `Outcome.key` gives it
   * (`evt:…` or `dig:…`)
   * @throws InvalidDeliveryError when a delivery cannot be keyed; `INVALID_OPTIONS` for a
   * string that is not an event key, or a store without `inspect`.
   * @throws StoreUnavailableError when the store failed (reported, reason `inspect`).
   */
  inspect(target: EventTarget): Promise<Inspection>;
  /**
   * Delete the event's record, whoever owns it, so that a deliberate replay of it runs again;
   * reports the decision `forgotten`. Forgetting an event still in flight lets a redelivery run
   * it beside the first attempt. With the sequence guard, the watermark stays: a replay of an
   * event older than its subject's newest is `stale`.
   * @param target - as for {@link Gate.inspect}
   * @returns `true` when a record was deleted, `false` when there was none.
   * @throws InvalidDeliveryError when a delivery cannot be keyed; `INVALID_OPTIONS` for a
   * target that is not an event (a blank id, a string that is not an event key), or a store
   * without `forget`.
   * @throws StoreUnavailableError when the store failed (reported, reason `forget`).
   */
  forget(target: EventTarget): Promise<boolean>;
}

/** Options of {@link Gate.runBatch}. */
export interface BatchOptions {
  /** The most handlers running at once. @default 8 */
  concurrency?: number;
}

export type { GateOptions, HeartbeatOptions, SequenceOptions } from './gate-options.js';

/**
 * Build a gate. Options are checked here: a wrong one throws a `HookgateError` with code
 * `INVALID_OPTIONS` that names it.
 *
 * @example
 * const gate = createGate({ store: new MemoryStore(), provider: providers.stripe });
 * const outcome = await gate.run({ payload, headers }, async (event) => applyPayment(event.payload));
 */
export function createGate<TPayload = unknown>(options: GateOptions): Gate<TPayload> {
  return new GateImpl<TPayload>(resolveGateOptions(options));
}

/** Why a claim was not acquired; `held` is `in-flight` to the caller (see {@link heldBack}). */
type Refusal = 'duplicate' | 'in-flight' | 'held' | 'stale' | 'conflict';

class GateImpl<TPayload> implements Gate<TPayload> {
  readonly namespace: string;
  readonly #options: ResolvedGateOptions;
  readonly #report: Report;
  readonly #host: LeaseHost;

  constructor(options: ResolvedGateOptions) {
    this.#options = options;
    this.namespace = options.namespace;
    this.#report = createReporter(options.namespace, options.provider, options.onDecision);
    registerReporter(this, this.#report);
    const { store, claimTtlMs, doneTtlMs, retain, heartbeat } = options;
    const reporting = options.onDecision !== undefined;
    this.#host = {
      store,
      claimTtlMs,
      doneTtlMs,
      retain,
      heartbeat,
      report: this.#report,
      reporting,
    };
  }

  async run<TResult>(
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>> {
    const prepared = prepareDelivery<TPayload>(this.#options, this.#report, delivery);
    const { event } = prepared;
    const acquiring = this.#acquire(prepared);
    // A store that answered at once (see `answered`) leaves nothing to wait for.
    const lease = acquiring instanceof Promise ? await acquiring : acquiring;
    if (typeof lease === 'string') return { status: inFlightIfHeld(lease), key: event.key };
    let result: Awaited<TResult>;
    try {
      const value = handler(event, prepared.delivery);
      // A handler that answers synchronously is not awaited (a turn of the queue less).
      result = isThenable(value) ? await value : (value as Awaited<TResult>);
    } catch (error) {
      if (isAlreadyDone(error)) {
        // Done elsewhere (a ledger): record it here too; whatever the store says, it is done.
        await lease.doneElsewhere().catch(() => {});
        return { status: 'duplicate', key: event.key };
      }
      // A settle failure has been reported; the handler's error is the one the caller needs.
      await lease.fail(error).catch(() => {});
      throw error;
    }
    try {
      const settling = lease.doneNow();
      if (settling !== undefined) await settling;
    } catch (error) {
      // The work is done and only its bookkeeping failed (reported): answering 5xx would make
      // the provider redeliver into a second run once the claim expires.
      if (!(error instanceof StoreUnavailableError)) throw error;
    }
    return { status: 'processed', key: event.key, result };
  }

  get batched(): boolean {
    return this.#options.split !== undefined;
  }

  split(delivery: Delivery): Delivery[] {
    const { split } = this.#options;
    if (split === undefined) return [delivery];
    let events: unknown;
    try {
      events = split(payloadOf(delivery));
    } catch (error) {
      throw this.#invalid(unreadable(error));
    }
    if (!Array.isArray(events)) {
      throw this.#invalid(
        new InvalidDeliveryError('not-json', 'split(payload) did not give an array of events'),
      );
    }
    return events.map((payload) => ({ payload, headers: delivery.headers }));
  }

  async runBatch<TResult>(
    deliveries: readonly Delivery[],
    handler: Handler<TPayload, TResult>,
    options: BatchOptions = {},
  ): Promise<BatchResult<Awaited<TResult>>[]> {
    const concurrency = options.concurrency ?? 8;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
      invalidOption('concurrency', 'must be a positive integer');
    }
    return mapConcurrently(deliveries, concurrency, (delivery) =>
      this.run(delivery, handler).catch(
        (error: unknown): BatchResult<Awaited<TResult>> => ({ status: 'failed', error }),
      ),
    );
  }

  inspect(target: EventTarget): Promise<Inspection> {
    return inspectEvent(this.#options, this.#report, target);
  }

  forget(target: EventTarget): Promise<boolean> {
    return forgetEvent(this.#options, this.#report, target);
  }

  #invalid(error: unknown): unknown {
    if (error instanceof InvalidDeliveryError) {
      this.#report('invalid', undefined, { reason: error.reason, error });
    }
    return error;
  }

  claim(delivery: Delivery): Promise<Claim<TPayload>> {
    let prepared: Prepared<TPayload>;
    try {
      prepared = prepareDelivery<TPayload>(this.#options, this.#report, delivery);
    } catch (error) {
      return Promise.reject(error);
    }
    const handle = (lease: Lease<TPayload> | Refusal): Claim<TPayload> =>
      typeof lease === 'string'
        ? new ClaimHandle(lease, prepared.event, undefined, 0)
        : new ClaimHandle('acquired', prepared.event, lease, this.#options.claimTtlMs);
    // `#acquire` turns a store's throw into a rejection. A store that answered at once: so is
    // the claim (see `answered`).
    const acquiring = this.#acquire(prepared);
    return acquiring instanceof Promise ? acquiring.then(handle) : answered(handle(acquiring));
  }

  /**
   * Claim a prepared delivery and apply the sequence guard; reports the decision. Not `async`:
   * one promise chained on the store's, rather than an async frame of its own per delivery;
   * and none at all when the store {@link answered} at once (unless the sequence guard must
   * advance the subject).
   */
  #acquire(
    prepared: Prepared<TPayload>,
  ): Lease<TPayload> | Refusal | Promise<Lease<TPayload> | Refusal> {
    const { store, claimTtlMs } = this.#options;
    const token = ownerToken();
    const { claimKey, fingerprint } = prepared;
    let claiming: Promise<ClaimState>;
    try {
      // A native promise (one of another library, or a bare value, becomes one), so that a
      // pending claim is never mistaken for an answer: an `answered` promise is kept as it is.
      claiming = Promise.resolve(store.claim(claimKey, token, claimTtlMs, fingerprint));
    } catch (error) {
      return Promise.reject(this.#claimFailed(error, prepared.event));
    }
    const state = answerOf(claiming);
    if (state !== undefined && (prepared.subjectKey === undefined || state !== 'acquired')) {
      return this.#admit(prepared, token, state);
    }
    return claiming.then(
      (state) =>
        prepared.subjectKey === undefined || state !== 'acquired'
          ? this.#admit(prepared, token, state)
          : this.#admitInSequence(prepared, token),
      (error: unknown) => {
        throw this.#claimFailed(error, prepared.event);
      },
    );
  }

  /** A claim the store failed: reported, and thrown as `StoreUnavailableError`. */
  #claimFailed(error: unknown, event: WebhookEvent<TPayload>): unknown {
    const failure = toStoreError(error, 'claim');
    this.#report('store-unavailable', event, { reason: 'claim', error: failure });
    return failure;
  }

  /**
   * Decide on the claim's state (without the sequence guard, or when it was not acquired). An
   * answer outside `ClaimState` (a conflict when no fingerprint was sent, too) is the store's
   * failure: reported, and a rejected `StoreUnavailableError`.
   */
  #admit(
    prepared: Prepared<TPayload>,
    token: string,
    state: ClaimState,
  ): Lease<TPayload> | Refusal | Promise<never> {
    const { event } = prepared;
    if (state === 'acquired') return this.#lease(prepared, token);
    if (state === 'done') return this.#refuse('duplicate', event);
    if (state === 'processing') return this.#refuse('in-flight', event);
    const received = prepared.fingerprint;
    if (isConflict(state) && received !== undefined) {
      const fingerprints = {
        stored: state.fingerprint.slice(0, 12),
        received: received.slice(0, 12),
      };
      this.#report('conflict', event, { fingerprints });
      return 'conflict';
    }
    return Promise.reject(this.#claimFailed(unreadableAnswer('claim', state), event));
  }

  /** An acquired claim under the sequence guard: advance the subject's watermark first. */
  async #admitInSequence(
    prepared: Prepared<TPayload>,
    token: string,
  ): Promise<Lease<TPayload> | Refusal> {
    const admitted = await advanceSubject(this.#options, this.#report, prepared, token);
    if (admitted !== 'applied')
      return this.#refuse(admitted === 'stale' ? 'stale' : 'held', prepared.event);
    return this.#lease(prepared, token);
  }

  #lease(prepared: Prepared<TPayload>, token: string): Lease<TPayload> {
    const { event } = prepared;
    this.#report('new', event);
    const { claimKey: key, fingerprint } = prepared;
    const { doneTtlMs } = this.#options;
    event.lease =
      fingerprint === undefined
        ? { key, token, doneTtlMs }
        : { key, token, doneTtlMs, fingerprint };
    return new Lease(this.#host, prepared, token);
  }

  #refuse(status: Refusal, event: WebhookEvent<TPayload>): Refusal {
    this.#report(inFlightIfHeld(status), event);
    return status;
  }
}

/** A `ClaimState` conflict, as a store that keeps to the contract answers one. */
function isConflict(state: unknown): state is ClaimConflict {
  return (
    typeof state === 'object' &&
    state !== null &&
    (state as ClaimConflict).state === 'conflict' &&
    typeof (state as ClaimConflict).fingerprint === 'string'
  );
}

function inFlightIfHeld(status: Refusal): Exclude<Refusal, 'held'> {
  return status === 'held' ? 'in-flight' : status;
}

/** @internal Whether a value (a handler's result, a verdict) must be awaited. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

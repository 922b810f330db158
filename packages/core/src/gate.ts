import { randomUUID } from 'node:crypto';
import {
  type HookgateError,
  InvalidDeliveryError,
  type InvalidReason,
  invalidOption,
  LeaseLostError,
  StoreUnavailableError,
  toStoreError,
} from './errors.js';
import { compileKeyOptions, idString, type KeyDeriver, keyOf, keyPart, payloadOf } from './key.js';
import type { Preset } from './providers.js';
import { compileSelector, type Read } from './select.js';
import type { ClaimStore } from './store.js';
import { parseTimestamp } from './time.js';
import type {
  Decision,
  DecisionEvent,
  Delivery,
  KeySource,
  Outcome,
  Selector,
  WebhookEvent,
} from './types.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** An event time further ahead than this is refused by the sequence guard (it would poison the watermark). */
const MAX_FUTURE_MS = DAY;

/** The sequence guard: drop events older than the newest one applied for their subject. */
export interface SequenceOptions {
  /** Where the subject lives. @default the gate's (or preset's) `subject` */
  subject?: Selector;
  /** Where the provider's event time lives. @default the gate's (or preset's) `occurredAt` */
  occurredAt?: Selector;
  /** How long a subject's watermark lives after its last advance, in ms. @default 30 days */
  ttlMs?: number;
  /**
   * An event stamped with the same time as the watermark: `'drop'` treats it as stale (the
   * strictly-newer rule), `'apply'` lets it through. Providers that stamp whole seconds
   * (Stripe `created`, Slack `event_time`) often stamp two events about one subject alike.
   * @default 'drop'
   */
  ties?: 'drop' | 'apply';
}

/** How often the heartbeat extends a held claim. */
export interface HeartbeatOptions {
  /** Milliseconds between two extensions; shorter than `claimTtlMs`. */
  intervalMs: number;
}

/** Options of {@link createGate}. */
export interface GateOptions {
  /** Where claims and watermarks live. */
  store: ClaimStore;
  /**
   * Prefix of every store key (`<namespace>:<key>`): separates providers and tenants.
   * @default 'hookgate'
   */
  namespace?: string;
  /** A provider preset (`providers.stripe`, …); explicit options win over its fields. */
  provider?: Preset;
  /** A name for decision events, when no `provider` is given (presets spread into the options set it). */
  name?: string;
  /**
   * Where the provider's event id lives: a payload path, `{ header }`, a function, or an array
   * of them tried in order. Without one, every delivery is keyed by its digest.
   * @default the preset's, else none
   */
  eventId?: Selector | readonly Selector[];
  /**
   * Key a delivery without an event id by the SHA-256 of its canonical JSON. When `false`,
   * such a delivery is invalid.
   * @default true
   */
  digestFallback?: boolean;
  /** Where the event's subject (the grant, customer, … it is about) lives. @default the preset's */
  subject?: Selector;
  /** Where the provider's event time lives. @default the preset's */
  occurredAt?: Selector;
  /**
   * How long a claim holds before it frees itself (a crashed worker), in ms. Must exceed the
   * longest handler run, or enable `heartbeat`.
   * @default 300_000 (5 minutes)
   */
  claimTtlMs?: number;
  /**
   * How long a done record lives, in ms: longer than the provider's retry horizon.
   * @default the preset's, else 86_400_000 (24 hours)
   */
  doneTtlMs?: number;
  /**
   * When the handler fails: `'release'` deletes the claim so that the next redelivery redoes
   * the work; `'retain'` marks it done, because the event now belongs to your own durable retry
   * pipeline, and redeliveries are acknowledged as duplicates.
   * @default 'release'
   */
  onFailure?: 'release' | 'retain';
  /**
   * Turn on the sequence guard: `true` uses `subject` and `occurredAt` as configured; an
   * object names them (and the watermark TTL and tie rule) directly.
   * @default false
   */
  sequence?: boolean | SequenceOptions;
  /**
   * Extend the claim while it is held, so a long handler keeps it. `true` extends every
   * `claimTtlMs / 3`. A heartbeat runs until the claim is settled.
   * @default false
   */
  heartbeat?: boolean | HeartbeatOptions;
  /** Called with every decision. A hook that throws or rejects never breaks the gate. */
  onDecision?: (event: DecisionEvent) => void;
}

/** The low-level handle of one claim attempt, as `gate.claim` returns it. */
export interface Claim<TPayload = unknown> {
  /**
   * `acquired`: the caller owns the claim and must settle it with `done()` or `fail()`.
   * `duplicate`, `in-flight`, `stale`: nothing to do; settling is a no-op.
   */
  readonly status: 'acquired' | 'duplicate' | 'in-flight' | 'stale';
  /** `status === 'acquired'`. */
  readonly acquired: boolean;
  /** The idempotency key (without the namespace). */
  readonly key: string;
  /** How `key` was derived: the provider's event id, or a digest of the payload. */
  readonly source: KeySource;
  /** The event, as the handler sees it. */
  readonly event: WebhookEvent<TPayload>;
  /**
   * Mark the event done for `doneTtlMs`. Safe to call again after a `StoreUnavailableError`.
   * @throws LeaseLostError when the claim expired and may belong to another worker now.
   * @throws StoreUnavailableError when the store failed; the outcome is unknown.
   */
  done(): Promise<void>;
  /**
   * Delete the claim so that the next delivery redoes the work (whatever `onFailure` says).
   * @throws LeaseLostError when the claim was no longer ours (nothing was deleted).
   */
  release(): Promise<void>;
  /** Settle a failed attempt as `onFailure` says: release, or retain as done. */
  fail(error?: unknown): Promise<void>;
  /**
   * Reset the claim's TTL to `ms` (default `claimTtlMs`).
   * @throws LeaseLostError when the claim was no longer ours.
   */
  extend(ms?: number): Promise<void>;
}

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
   * @returns `processed` with the handler's result, or `duplicate`, `in-flight` or `stale`.
   * @throws the handler's error, after the claim was released (or retained).
   * @throws InvalidDeliveryError when the delivery cannot be keyed; nothing was claimed.
   * @throws StoreUnavailableError when the store failed; the handler did not run.
   * @throws LeaseLostError when the handler finished after its claim expired.
   *
   * When the handler succeeded but the store fails to record it as done (twice), `run` still
   * resolves `processed` — the work happened — and reports `store-unavailable`; the claim then
   * expires after `claimTtlMs`, and a later redelivery would run again (see the guarantees doc).
   */
  run<TResult>(
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>>;
  /**
   * The low-level step `run` is made of: key the delivery, claim it and apply the sequence
   * guard. When the result is `acquired`, the caller owns the claim and must settle it.
   * @throws InvalidDeliveryError, StoreUnavailableError, as `run`.
   */
  claim(delivery: Delivery): Promise<Claim<TPayload>>;
}

interface Config {
  store: ClaimStore;
  namespace: string;
  provider: string | undefined;
  deriver: KeyDeriver;
  subject: Read | undefined;
  occurredAt: Read | undefined;
  claimTtlMs: number;
  doneTtlMs: number;
  retain: boolean;
  sequence: { ttlMs: number; ties: 'drop' | 'apply' } | undefined;
  heartbeatMs: number;
  onDecision: ((event: DecisionEvent) => void) | undefined;
}

/**
 * Build a gate. Options are checked here: a wrong one throws a `HookgateError` with code
 * `INVALID_OPTIONS` that names it.
 *
 * @example
 * const gate = createGate({ store: new MemoryStore(), provider: providers.stripe });
 * const outcome = await gate.run({ payload, headers }, async (event) => applyPayment(event.payload));
 */
export function createGate<TPayload = unknown>(options: GateOptions): Gate<TPayload> {
  return new GateImpl<TPayload>(resolve(options));
}

function resolve(options: GateOptions): Config {
  if (typeof options !== 'object' || options === null)
    invalidOption('options', 'must be an object');
  const { store, provider } = options;
  for (const op of ['claim', 'done', 'release', 'extend', 'advance'] as const) {
    if (typeof store?.[op] !== 'function')
      invalidOption('store', `must be a ClaimStore (no ${op}())`);
  }
  const namespace = options.namespace ?? 'hookgate';
  if (typeof namespace !== 'string' || !/^[\x21-\x7e]{1,64}$/.test(namespace)) {
    invalidOption('namespace', 'must be 1 to 64 visible ASCII characters');
  }
  const claimTtlMs = ttl('claimTtlMs', options.claimTtlMs, 5 * MINUTE);
  const doneTtlMs = ttl('doneTtlMs', options.doneTtlMs ?? provider?.doneTtlMs, DAY);
  const onFailure = options.onFailure ?? 'release';
  if (onFailure !== 'release' && onFailure !== 'retain') {
    invalidOption('onFailure', "must be 'release' or 'retain'");
  }
  const seq = options.sequence === true ? {} : options.sequence || undefined;
  const subjectSel = seq?.subject ?? options.subject ?? provider?.subject;
  const occurredAtSel = seq?.occurredAt ?? options.occurredAt ?? provider?.occurredAt;
  let sequence: Config['sequence'];
  if (seq !== undefined) {
    if (subjectSel === undefined || occurredAtSel === undefined) {
      invalidOption(
        'sequence',
        'needs a subject and an occurredAt selector (in it, the options or the preset)',
      );
    }
    const ties = seq.ties ?? 'drop';
    if (ties !== 'drop' && ties !== 'apply')
      invalidOption('sequence.ties', "must be 'drop' or 'apply'");
    sequence = { ttlMs: ttl('sequence.ttlMs', seq.ttlMs, 30 * DAY), ties };
  }
  let heartbeatMs = 0;
  if (options.heartbeat === true) heartbeatMs = Math.max(1, Math.floor(claimTtlMs / 3));
  else if (options.heartbeat) {
    heartbeatMs = ttl('heartbeat.intervalMs', options.heartbeat.intervalMs, 0);
    if (heartbeatMs >= claimTtlMs)
      invalidOption('heartbeat.intervalMs', 'must be shorter than claimTtlMs');
  }
  if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
    invalidOption('onDecision', 'must be a function');
  }
  return {
    store,
    namespace,
    provider: provider?.name ?? options.name,
    deriver: compileKeyOptions(options),
    subject: subjectSel === undefined ? undefined : compileSelector(subjectSel, 'subject'),
    occurredAt:
      occurredAtSel === undefined ? undefined : compileSelector(occurredAtSel, 'occurredAt'),
    claimTtlMs,
    doneTtlMs,
    retain: onFailure === 'retain',
    sequence,
    heartbeatMs,
    onDecision: options.onDecision,
  };
}

function ttl(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    invalidOption(option, `must be a positive integer of milliseconds (got ${String(value)})`);
  }
  return value;
}

/** A delivery made ready for the store. */
interface Prepared<TPayload> {
  event: WebhookEvent<TPayload>;
  storeKey: string;
  seqKey: string | undefined;
}

class GateImpl<TPayload> implements Gate<TPayload> {
  readonly namespace: string;
  /** @internal */ readonly config: Config;

  constructor(config: Config) {
    this.config = config;
    this.namespace = config.namespace;
  }

  async run<TResult>(
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>> {
    // The claim is settled here directly, without building the public handle (and its promise
    // hops) for each delivery.
    const prepared = this.prepare(delivery);
    const token = randomUUID();
    const status = await this.acquire(prepared, token);
    const { event } = prepared;
    if (status !== 'acquired') return { status, key: event.key };
    const started = this.config.onDecision === undefined ? 0 : Date.now();
    const heartbeat =
      this.config.heartbeatMs > 0 ? new Heartbeat(this, prepared, token) : undefined;
    let result: Awaited<TResult>;
    try {
      result = await handler(event, delivery);
    } catch (error) {
      heartbeat?.stop();
      const decision = this.config.retain ? 'retained' : 'released';
      try {
        if (!(await this.settle(prepared, token, decision, started, error)) && !heartbeat?.lost) {
          this.lost(prepared, decision === 'released' ? 'release' : 'done');
        }
      } catch {
        // Reported through onDecision; the handler's error is the one the caller needs.
      }
      throw error;
    }
    heartbeat?.stop();
    try {
      if (!(await this.settle(prepared, token, 'done', started))) {
        // A heartbeat that found the claim gone has reported it already.
        throw heartbeat?.lost
          ? new LeaseLostError(prepared.storeKey, 'done')
          : this.lost(prepared, 'done');
      }
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      // The work is done and only its bookkeeping failed: answering 5xx would make the provider
      // redeliver into a second run once the claim expires. Retry once (done is idempotent for
      // its owner); either way the failure has been reported through onDecision.
      await this.settle(prepared, token, 'done', started).then(
        (owned) => void (owned || this.lost(prepared, 'done')),
        () => {},
      );
    }
    return { status: 'processed', key: event.key, result };
  }

  async claim(delivery: Delivery): Promise<Claim<TPayload>> {
    const prepared = this.prepare(delivery);
    const token = randomUUID();
    return new ClaimHandle(this, prepared, token, await this.acquire(prepared, token));
  }

  /** Claim a prepared delivery with `token` and apply the sequence guard; reports the decision. */
  private async acquire(prepared: Prepared<TPayload>, token: string): Promise<Claim['status']> {
    const { store, claimTtlMs } = this.config;
    let state: Awaited<ReturnType<ClaimStore['claim']>>;
    try {
      state = await store.claim(prepared.storeKey, token, claimTtlMs);
    } catch (error) {
      throw this.storeFailed(error, 'claim', prepared);
    }
    if (state !== 'acquired') {
      const status = state === 'done' ? 'duplicate' : 'in-flight';
      this.report(status, prepared.event);
      return status;
    }
    if (prepared.seqKey !== undefined && !(await this.advance(prepared, token))) {
      this.report('stale', prepared.event);
      return 'stale';
    }
    this.report('new', prepared.event);
    return 'acquired';
  }

  /**
   * @internal One settling call on a claim we own: done (or retained as done) or released.
   * Resolves whether we still owned it, reporting `decision` when we did.
   * @throws StoreUnavailableError (reported) when the store failed; the claim is not settled.
   */
  async settle(
    prepared: Prepared<TPayload>,
    token: string,
    decision: 'done' | 'released' | 'retained',
    started: number,
    cause?: unknown,
  ): Promise<boolean> {
    const { store, doneTtlMs, onDecision } = this.config;
    let owned: boolean;
    try {
      owned =
        decision === 'released'
          ? await store.release(prepared.storeKey, token)
          : await store.done(prepared.storeKey, token, doneTtlMs);
    } catch (error) {
      throw this.storeFailed(error, decision === 'released' ? 'release' : 'done', prepared);
    }
    if (owned && onDecision !== undefined) {
      const extra: { durationMs: number; error?: unknown } = { durationMs: Date.now() - started };
      if (cause !== undefined) extra.error = cause;
      this.report(decision, prepared.event, extra);
    }
    return owned;
  }

  /** @internal A lost claim: the error to throw, reported. */
  lost(prepared: Prepared<TPayload>, operation: 'done' | 'release' | 'extend'): LeaseLostError {
    const error = new LeaseLostError(prepared.storeKey, operation);
    this.report('lease-lost', prepared.event, { error });
    return error;
  }

  /** The sequence guard, on a claim we own. A stale event's claim is marked done. */
  private async advance(prepared: Prepared<TPayload>, token: string): Promise<boolean> {
    const { store, sequence, doneTtlMs } = this.config;
    const { event, storeKey } = prepared;
    try {
      if (
        await store.advance(
          prepared.seqKey!,
          event.occurredAt!,
          event.key,
          sequence!.ttlMs,
          sequence!.ties,
        )
      ) {
        return true;
      }
      await store.done(storeKey, token, doneTtlMs);
      return false;
    } catch (error) {
      // Best effort: free the key now rather than after claimTtlMs.
      store.release(storeKey, token).catch(() => {});
      throw this.storeFailed(error, 'advance', prepared);
    }
  }

  private prepare(delivery: Delivery): Prepared<TPayload> {
    const config = this.config;
    let event: WebhookEvent<TPayload>;
    try {
      const payload = payloadOf(delivery);
      // Function selectors get the parsed payload even when only the raw body was given.
      if (delivery.payload === undefined) delivery = { ...delivery, payload };
      const { key, source } = keyOf(config.deriver, payload, delivery);
      event = { key, source, payload: payload as TPayload };
      if (config.subject !== undefined) {
        const subject = idString(config.subject(payload, delivery));
        if (subject !== undefined) event.subject = subject;
      }
      if (config.occurredAt !== undefined) {
        const raw = config.occurredAt(payload, delivery);
        const occurredAt = parseTimestamp(raw);
        if (occurredAt !== undefined) event.occurredAt = occurredAt;
        else if (config.sequence !== undefined) {
          throw new InvalidDeliveryError(
            'bad-timestamp',
            raw === undefined || raw === null
              ? 'delivery has no event time, which the sequence guard needs'
              : 'event time is not an ISO 8601 / RFC 3339 time or unix seconds or milliseconds',
          );
        }
      }
    } catch (error) {
      throw this.invalid(error);
    }
    let seqKey: string | undefined;
    if (config.sequence !== undefined) {
      if (event.subject === undefined) {
        throw this.invalid(
          new InvalidDeliveryError(
            'missing-subject',
            'delivery has no subject, which the sequence guard needs',
          ),
          event,
        );
      }
      if (event.occurredAt! > Date.now() + MAX_FUTURE_MS) {
        throw this.invalid(
          new InvalidDeliveryError('bad-timestamp', 'event time is more than a day in the future'),
          event,
        );
      }
      seqKey = `${config.namespace}:seq:${keyPart(event.subject)}`;
    }
    return { event, storeKey: `${config.namespace}:${event.key}`, seqKey };
  }

  private invalid(error: unknown, event?: WebhookEvent<TPayload>): unknown {
    if (error instanceof InvalidDeliveryError) {
      this.report('invalid', event, { reason: error.reason, error });
    }
    return error;
  }

  /** @internal */
  storeFailed(error: unknown, operation: string, prepared: Prepared<TPayload>): HookgateError {
    const failure = toStoreError(error, operation);
    this.report('store-unavailable', prepared.event, { error: failure });
    return failure;
  }

  /** @internal Tell onDecision, never letting it break the gate. */
  report(
    decision: Decision,
    event: WebhookEvent<TPayload> | undefined,
    extra?: { reason?: InvalidReason; error?: unknown; durationMs?: number },
  ): void {
    const hook = this.config.onDecision;
    if (hook === undefined) return;
    const record: DecisionEvent = { decision, namespace: this.config.namespace, at: Date.now() };
    if (this.config.provider !== undefined) record.provider = this.config.provider;
    if (event !== undefined) {
      record.key = event.key;
      record.source = event.source;
      if (event.subject !== undefined) record.subject = event.subject;
      if (event.occurredAt !== undefined) record.occurredAt = event.occurredAt;
    }
    if (extra !== undefined) Object.assign(record, extra);
    try {
      const result = hook(record) as unknown;
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // A logging hook must never decide the fate of a delivery.
    }
  }
}

class ClaimHandle<TPayload> implements Claim<TPayload> {
  readonly status: Claim['status'];
  readonly acquired: boolean;
  readonly key: string;
  readonly source: KeySource;
  readonly event: WebhookEvent<TPayload>;
  #gate: GateImpl<TPayload>;
  #prepared: Prepared<TPayload>;
  #token: string;
  #started: number;
  #settled: boolean;
  #heartbeat: Heartbeat<TPayload> | undefined;
  #lostReported = false;

  constructor(
    gate: GateImpl<TPayload>,
    prepared: Prepared<TPayload>,
    token: string,
    status: Claim['status'],
  ) {
    this.#gate = gate;
    this.#prepared = prepared;
    this.#token = token;
    // Only the decision events' durationMs needs the start.
    this.#started = gate.config.onDecision === undefined ? 0 : Date.now();
    this.status = status;
    this.acquired = status === 'acquired';
    this.#settled = !this.acquired;
    this.event = prepared.event;
    this.key = prepared.event.key;
    this.source = prepared.event.source;
    if (this.acquired && gate.config.heartbeatMs > 0) {
      this.#heartbeat = new Heartbeat(gate, prepared, token);
    }
  }

  done(): Promise<void> {
    return this.#settle('done');
  }

  release(): Promise<void> {
    return this.#settle('released');
  }

  fail(error?: unknown): Promise<void> {
    return this.#settle(this.#gate.config.retain ? 'retained' : 'released', error);
  }

  async extend(ms?: number): Promise<void> {
    if (this.#settled) return;
    const { store, claimTtlMs } = this.#gate.config;
    const ttlMs = ms === undefined ? claimTtlMs : ttl('ms', ms, 0);
    let owned: boolean;
    try {
      owned = await store.extend(this.#prepared.storeKey, this.#token, ttlMs);
    } catch (error) {
      throw this.#gate.storeFailed(error, 'extend', this.#prepared);
    }
    if (!owned) throw this.#lost('extend');
  }

  async #settle(decision: 'done' | 'released' | 'retained', cause?: unknown): Promise<void> {
    if (this.#settled) return;
    const owned = await this.#gate.settle(
      this.#prepared,
      this.#token,
      decision,
      this.#started,
      cause,
    );
    this.#settled = true;
    this.#heartbeat?.stop();
    if (!owned) throw this.#lost(decision === 'released' ? 'release' : 'done');
  }

  #lost(operation: 'done' | 'release' | 'extend'): LeaseLostError {
    this.#heartbeat?.stop();
    if (this.#lostReported || this.#heartbeat?.lost) {
      return new LeaseLostError(this.#prepared.storeKey, operation);
    }
    this.#lostReported = true;
    return this.#gate.lost(this.#prepared, operation);
  }
}

/**
 * Extends a held claim every `heartbeatMs` until stopped. A beat that finds the claim gone
 * reports `lease-lost` once and stops; a beat the store fails is retried on the next tick.
 */
class Heartbeat<TPayload> {
  /** Whether a beat found the claim gone (and reported it). */
  lost = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #beating = false;

  constructor(
    readonly gate: GateImpl<TPayload>,
    readonly prepared: Prepared<TPayload>,
    readonly token: string,
  ) {
    this.#timer = setInterval(() => this.#beat(), gate.config.heartbeatMs);
    this.#timer.unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    if (this.#beating || this.#timer === undefined) return;
    this.#beating = true;
    const { store, claimTtlMs } = this.gate.config;
    store.extend(this.prepared.storeKey, this.token, claimTtlMs).then(
      (owned) => {
        this.#beating = false;
        if (owned || this.#timer === undefined) return;
        this.lost = true;
        this.stop();
        this.gate.lost(this.prepared, 'extend');
      },
      () => {
        // A missed beat is retried on the next tick; the claim outlives a few of them.
        this.#beating = false;
      },
    );
  }
}

import { invalidOption } from './errors.js';
import { compileKeyOptions, type KeyDeriver } from './key.js';
import { checkPreset, type Preset } from './providers.js';
import { type CompiledSelector, compileSelector } from './select.js';
import type { ClaimStore } from './store.js';
import type { DecisionEvent, Selector } from './types.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

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

/** How the heartbeat keeps a held claim alive, and for how long at most. */
export interface HeartbeatOptions {
  /**
   * Milliseconds between two extensions; shorter than `claimTtlMs`, and at most 2,147,483,647
   * (a timer takes no more).
   * @default claimTtlMs / 3 (at most 2,147,483,647)
   */
  intervalMs?: number;
  /**
   * The longest a heartbeat keeps a claim, counted from its acquisition, in ms. Past it the
   * heartbeat stops, the claim expires `claimTtlMs` after its last extension, a redelivery
   * redoes the work, and the late handler's `done` finds the key taken (`LeaseLostError`).
   * It bounds a handler that never ends.
   * @default 3_600_000 (1 hour)
   */
  maxMs?: number;
}

/** Options of {@link createGate}. */
export interface GateOptions {
  /** Where claims and watermarks live. */
  store: ClaimStore;
  /**
   * Prefix of every store key (`<namespace>:<key>`): separates providers and tenants.
   * 1 to 64 characters of `A-Z a-z 0-9 _ . -`.
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
   * @default the preset's, else true
   */
  digestFallback?: boolean;
  /**
   * For providers that post many events in one body (SendGrid's Event Webhook): the events of
   * a body's parsed payload. `gate.split` applies it; `gate.runBatch` takes its deliveries, and
   * the bindings claim every event and answer 2xx only when each is processed, a duplicate,
   * stale or a conflict (or in flight elsewhere, with the binding's `inFlight: 'ack'`).
   * @default the preset's, else none (one event per body)
   */
  split?: (payload: unknown) => readonly unknown[];
  /**
   * Check the payload behind an event id: the SHA-256 of the payload's canonical JSON is stored
   * with the claim, and a later delivery of the same key with another payload is a `conflict`
   * (the handler does not run; the bindings answer 422, or, in a body of many events, count it
   * settled) rather than a silent duplicate. Catches
   * a wrong `eventId` selector, a provider that reuses ids, or a replay with an altered body.
   * It adds no store round trip. A delivery keyed by its digest needs no fingerprint (another
   * body is another key), and a record written without one never conflicts.
   * @default the preset's, else false
   */
  fingerprint?: boolean;
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
   * object names them (and the watermark TTL and tie rule) directly. With it, one event per
   * subject is processed at a time: another event of a subject that is being processed is
   * `in-flight`, and comes back later.
   * @default false
   */
  sequence?: boolean | SequenceOptions;
  /**
   * Extend the claim while the handler runs, so a long handler keeps it: `true` extends every
   * `claimTtlMs / 3` for at most an hour; an object sets the interval and the bound. The first
   * attempt to settle the claim stops it.
   * @default false
   */
  heartbeat?: boolean | HeartbeatOptions;
  /** Called with every decision. A hook that throws or rejects never breaks the gate. */
  onDecision?: (event: DecisionEvent) => void;
}

/** @internal The gate's options, checked, with their defaults and selectors compiled. */
export interface ResolvedGateOptions {
  readonly store: ClaimStore;
  readonly namespace: string;
  readonly provider: string | undefined;
  readonly deriver: KeyDeriver;
  readonly fingerprint: boolean;
  readonly split: ((payload: unknown) => readonly unknown[]) | undefined;
  readonly subject: CompiledSelector | undefined;
  readonly occurredAt: CompiledSelector | undefined;
  readonly claimTtlMs: number;
  readonly doneTtlMs: number;
  readonly retain: boolean;
  readonly sequence: { readonly ttlMs: number; readonly ties: 'drop' | 'apply' } | undefined;
  readonly heartbeat: { readonly intervalMs: number; readonly maxMs: number } | undefined;
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
}

const STORE_METHODS = [
  'claim',
  'done',
  'release',
  'extend',
  'advance',
  'releaseHold',
  'extendHold',
] as const;

/** The fields of each options object, so that a misspelt one is refused, not ignored. */
const FIELDS = {
  options: new Set<string>([
    'store',
    'namespace',
    'provider',
    'name',
    'eventId',
    'digestFallback',
    'split',
    'fingerprint',
    'subject',
    'occurredAt',
    'claimTtlMs',
    'doneTtlMs',
    'onFailure',
    'sequence',
    'heartbeat',
    'onDecision',
  ]),
  sequence: new Set<string>(['subject', 'occurredAt', 'ttlMs', 'ties']),
  heartbeat: new Set<string>(['intervalMs', 'maxMs']),
};

function checkFields(given: object, of: keyof typeof FIELDS): void {
  const known = FIELDS[of];
  const unknown = Object.keys(given).find((field) => !known.has(field));
  if (unknown === undefined) return;
  const name = of === 'options' ? unknown : `${of}.${unknown}`;
  invalidOption(
    name,
    `is not an option (${of === 'options' ? 'createGate' : of} takes ${[...known].join(', ')})`,
  );
}

/** @internal Check every option of {@link createGate}, naming the one at fault. */
export function resolveGateOptions(options: GateOptions): ResolvedGateOptions {
  if (typeof options !== 'object' || options === null)
    invalidOption('options', 'must be an object');
  checkFields(options, 'options');
  const { store, provider } = options;
  if (provider !== undefined) {
    if (typeof provider !== 'object' || provider === null)
      invalidOption('provider', 'must be a preset');
    checkPreset(provider);
  }
  if (options.name !== undefined && (typeof options.name !== 'string' || !options.name.trim())) {
    invalidOption('name', 'must be a non-empty string');
  }
  for (const method of STORE_METHODS) {
    if (typeof store?.[method] !== 'function')
      invalidOption('store', `must be a ClaimStore (no ${method}())`);
  }
  const namespace = options.namespace ?? 'hookgate';
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(namespace)) {
    invalidOption('namespace', 'must be 1 to 64 characters of A-Z a-z 0-9 _ . -');
  }
  const claimTtlMs = positiveMs('claimTtlMs', options.claimTtlMs, 5 * MINUTE);
  const doneTtlMs = positiveMs('doneTtlMs', options.doneTtlMs ?? provider?.doneTtlMs, DAY);
  const onFailure = options.onFailure ?? 'release';
  if (onFailure !== 'release' && onFailure !== 'retain') {
    invalidOption('onFailure', "must be 'release' or 'retain'");
  }
  const given = options.sequence;
  if (
    given !== undefined &&
    typeof given !== 'boolean' &&
    (typeof given !== 'object' || given === null || Array.isArray(given))
  ) {
    invalidOption('sequence', 'must be a boolean or { subject?, occurredAt?, ttlMs?, ties? }');
  }
  const seq = given === true ? {} : given || undefined;
  if (seq !== undefined) checkFields(seq, 'sequence');
  const subject = seq?.subject ?? options.subject ?? provider?.subject;
  const occurredAt = seq?.occurredAt ?? options.occurredAt ?? provider?.occurredAt;
  let sequence: ResolvedGateOptions['sequence'];
  if (seq !== undefined) {
    if (subject === undefined || occurredAt === undefined) {
      invalidOption(
        'sequence',
        'needs a subject and an occurredAt selector (in it, the options or the preset)',
      );
    }
    const ties = seq.ties ?? 'drop';
    if (ties !== 'drop' && ties !== 'apply')
      invalidOption('sequence.ties', "must be 'drop' or 'apply'");
    sequence = { ttlMs: positiveMs('sequence.ttlMs', seq.ttlMs, 30 * DAY), ties };
  }
  const fingerprint = options.fingerprint ?? provider?.fingerprint ?? false;
  if (typeof fingerprint !== 'boolean') invalidOption('fingerprint', 'must be a boolean');
  if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
    invalidOption('onDecision', 'must be a function');
  }
  const split = options.split ?? provider?.split;
  if (split !== undefined && typeof split !== 'function')
    invalidOption('split', 'must be a function');
  return {
    store,
    namespace,
    provider: provider?.name ?? options.name,
    deriver: compileKeyOptions(options),
    fingerprint,
    split,
    subject: subject === undefined ? undefined : compileSelector(subject, 'subject'),
    occurredAt: occurredAt === undefined ? undefined : compileSelector(occurredAt, 'occurredAt'),
    claimTtlMs,
    doneTtlMs,
    retain: onFailure === 'retain',
    sequence,
    heartbeat: heartbeatOptions(options.heartbeat, claimTtlMs),
    onDecision: options.onDecision,
  };
}

/** The longest delay `setTimeout` and `setInterval` take. */
const TIMER_MAX_MS = 2_147_483_647;

function heartbeatOptions(
  heartbeat: GateOptions['heartbeat'],
  claimTtlMs: number,
): ResolvedGateOptions['heartbeat'] {
  if (heartbeat === undefined || heartbeat === false) return undefined;
  const given = heartbeat === true ? {} : heartbeat;
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    invalidOption('heartbeat', 'must be a boolean or { intervalMs?, maxMs? }');
  }
  checkFields(given, 'heartbeat');
  if (given.intervalMs === undefined && claimTtlMs < 2) {
    // No interval is shorter than a claim of 1 ms; name the option the caller set.
    invalidOption('claimTtlMs', 'must be at least 2 ms with a heartbeat');
  }
  const intervalMs = positiveMs(
    'heartbeat.intervalMs',
    given.intervalMs,
    Math.min(Math.max(1, Math.floor(claimTtlMs / 3)), TIMER_MAX_MS),
  );
  if (intervalMs >= claimTtlMs) {
    invalidOption('heartbeat.intervalMs', 'must be shorter than claimTtlMs');
  }
  if (intervalMs > TIMER_MAX_MS) {
    // A timer takes no more: past it, Node.js fires it every millisecond.
    invalidOption('heartbeat.intervalMs', 'must be at most 2,147,483,647 (a timer takes no more)');
  }
  return { intervalMs, maxMs: positiveMs('heartbeat.maxMs', given.maxMs, HOUR) };
}

/** @internal A duration option: a positive integer of milliseconds, or `fallback` when absent. */
export function positiveMs(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    invalidOption(option, `must be a positive integer of milliseconds (got ${String(value)})`);
  }
  return value;
}

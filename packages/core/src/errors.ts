/**
 * Every error hookgate throws carries one of these codes. Branch on `code` (or on `name`),
 * which keeps working when two copies of `@hookgate/core` are installed side by side.
 */
export const ErrorCode = {
  /** The store could not be reached, failed, or did not answer within its deadline. */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /** The delivery cannot be gated: no key, not JSON, a bad timestamp, … (see `reason`). */
  INVALID_DELIVERY: 'INVALID_DELIVERY',
  /** The claim is no longer ours: it expired and may now belong to another worker. */
  LEASE_LOST: 'LEASE_LOST',
  /**
   * An option or argument is wrong: at construction (`createGate`, `definePreset`, a store, a
   * middleware, a verifier) or on a call (a bad `gate.inspect` or `forget` target,
   * `claim.extend(ms)`, `runBatch`'s `concurrency`, `sqsBatchResponse` given records and results
   * of different lengths), or a request whose body a parser consumed before the binding.
   */
  INVALID_OPTIONS: 'INVALID_OPTIONS',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const brand = Symbol.for('hookgate.error');

/**
 * Base class of every hookgate error.
 *
 * `instanceof` works across duplicate installs of the package: an error is recognised by its
 * brand and `code`, not by the identity of the class that made it.
 */
export class HookgateError extends Error {
  /** Machine-readable code, one of {@link ErrorCode}. */
  readonly code: ErrorCode;
  /** @internal */
  declare readonly [brand]: true;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'HookgateError';
    Object.defineProperty(this, brand, { value: true });
  }

  /** The code a subclass stands for; `undefined` for the base class, which matches them all. */
  protected static readonly matches: ErrorCode | undefined = undefined;

  /**
   * Recognise hookgate errors by brand and code, so `instanceof` holds for errors made by
   * another installed copy of `@hookgate/core`.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null || !(brand in value)) return false;
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass being tested against.
    const code = (this as typeof HookgateError).matches;
    return code === undefined || (value as HookgateError).code === code;
  }
}

/**
 * The store failed or did not answer within its deadline. From `gate.run` or `gate.claim` the
 * gate failed closed: no handler ran, so answer 5xx and let the provider retry. From a settle
 * (`claim.done()`, `release()`), the handler had run (see their docs). `cause` holds the
 * underlying error.
 */
export class StoreUnavailableError extends HookgateError {
  protected static override readonly matches = ErrorCode.STORE_UNAVAILABLE;
  /**
   * `foreign-value` when the key holds a value hookgate did not write (another application
   * writing under the namespace): every delivery of that event fails the same way until the
   * value is removed or expires. `unavailable` for everything else (unreachable, failed, timed
   * out).
   */
  readonly reason: 'unavailable' | 'foreign-value';
  constructor(
    message: string,
    options?: { cause?: unknown; reason?: 'unavailable' | 'foreign-value' },
  ) {
    super(ErrorCode.STORE_UNAVAILABLE, message, options);
    this.name = 'StoreUnavailableError';
    this.reason = options?.reason ?? 'unavailable';
  }
}

/** Why a delivery was refused. */
export type InvalidReason =
  /**
   * No event id and `digestFallback: false`, or an `eventId` function selector threw (even with
   * the digest fallback on: a delivery whose selector failed is not keyed by its digest).
   */
  | 'missing-id'
  /** The body or payload is not JSON (not parseable, not UTF-8, a non-JSON value, too deep). */
  | 'not-json'
  /** The sequence guard is on and the delivery has no usable subject. */
  | 'missing-subject'
  /** The sequence guard is on and the event time is absent, unparseable or out of range. */
  | 'bad-timestamp';

/** The delivery cannot be gated; nothing was claimed and no handler ran. Answer 400. */
export class InvalidDeliveryError extends HookgateError {
  protected static override readonly matches = ErrorCode.INVALID_DELIVERY;
  /** Machine-readable reason. */
  readonly reason: InvalidReason;
  constructor(reason: InvalidReason, message: string, options?: { cause?: unknown }) {
    super(ErrorCode.INVALID_DELIVERY, message, options);
    this.name = 'InvalidDeliveryError';
    this.reason = reason;
  }
}

/**
 * `done`, `release` or `extend` found that the claim is no longer ours: it outlived its TTL,
 * and another worker claimed the key (it is redoing the event, or did it). Nothing was
 * changed. An expired claim that nobody took is not lost: `done` still records it.
 */
export class LeaseLostError extends HookgateError {
  protected static override readonly matches = ErrorCode.LEASE_LOST;
  /** The store key whose claim was lost. */
  readonly key: string;
  /** The operation that found the claim taken. */
  readonly operation: 'done' | 'release' | 'extend';
  constructor(key: string, operation: 'done' | 'release' | 'extend') {
    super(
      ErrorCode.LEASE_LOST,
      `claim on ${key} was lost before ${operation}: it expired and another worker claimed the key`,
    );
    this.name = 'LeaseLostError';
    this.key = key;
    this.operation = operation;
  }
}

const alreadyDoneBrand = Symbol.for('hookgate.alreadyDone');

/**
 * For handler wrappers: `throw alreadyDone()` tells `gate.run` that this event was already done
 * elsewhere (a ledger row, a unique constraint of yours): `run` records it done in the store and
 * resolves `duplicate`, and nothing escapes. `@hookgate/pg`'s ledger throws it when its row for
 * the event is already there. Recognised by a brand, so two installed copies of
 * `@hookgate/core` agree.
 *
 * @example
 * const handler = async (event) => {
 *   const { rowCount } = await db.query('INSERT INTO seen (key) VALUES ($1) ON CONFLICT DO NOTHING', [event.key]);
 *   if (rowCount === 0) throw alreadyDone();
 *   // ... the effect, once
 * };
 */
export function alreadyDone(): Error {
  const signal = new Error('hookgate: the event was already done elsewhere');
  signal.name = 'AlreadyDone';
  Object.defineProperty(signal, alreadyDoneBrand, { value: true });
  return signal;
}

/** @internal Whether `error` is the signal {@link alreadyDone} makes. */
export function isAlreadyDone(error: unknown): boolean {
  return typeof error === 'object' && error !== null && alreadyDoneBrand in error;
}

/**
 * The one error builder of every hookgate package: a {@link HookgateError} whose message is
 * `<owner>: <message>`, as a {@link StoreUnavailableError} when `code` is `STORE_UNAVAILABLE`.
 * {@link optionError}, {@link storeError} and {@link foreignValueError} are made with it.
 * @param owner - who speaks: a class (`'PostgresStore'`), a package (`'@hookgate/express'`), or
 * `'hookgate'` for the gate itself
 * @example throw createError('@hookgate/express', 'INVALID_OPTIONS', 'the body was consumed');
 */
export function createError(
  owner: string,
  code: ErrorCode,
  message: string,
  options?: { cause?: unknown },
): HookgateError {
  const text = `${owner}: ${message}`;
  return code === ErrorCode.STORE_UNAVAILABLE
    ? new StoreUnavailableError(text, options)
    : new HookgateError(code, text, options);
}

/**
 * For store and binding authors: the error of a wrong option,
 * `<owner>: option \`<option>\` <why>`.
 * @example throw optionError('MyStore', 'timeoutMs', 'must be a positive integer of milliseconds');
 */
export function optionError(owner: string, option: string, why: string): HookgateError {
  return createError(owner, ErrorCode.INVALID_OPTIONS, `option \`${option}\` ${why}`);
}

/**
 * For store authors: what a failed store operation becomes, in the one format every hookgate
 * store uses. A `StoreUnavailableError` passes as it is; a deadline (`TimeoutError`, as
 * {@link Deadlines} rejects) says the outcome is unknown; anything else keeps its message, and
 * is the `cause`.
 * @param owner - the store's name, e.g. `'PostgresStore'`
 * @param operation - the operation that failed, e.g. `'claim'`
 */
export function storeError(
  owner: string,
  operation: string,
  error: unknown,
): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  const message =
    error instanceof DOMException && error.name === 'TimeoutError'
      ? `${operation} got no answer in time (${error.message}); the store may still apply it, so its outcome is unknown`
      : `${operation} failed: ${messageOf(error)}`;
  return unavailable(owner, message, error);
}

/**
 * For store authors: the error of an operation that found a value hookgate did not write under
 * its key (`cause`: the store's own error, if it raised one, such as Redis's `WRONGTYPE`). The
 * value is left as it is, and the gate fails closed (503).
 */
export function foreignValueError(
  owner: string,
  operation: string,
  key: string,
  cause?: unknown,
): StoreUnavailableError {
  return new StoreUnavailableError(
    `${owner}: ${operation}: key ${key} holds a value hookgate did not write; left as it is`,
    cause === undefined ? { reason: 'foreign-value' } : { reason: 'foreign-value', cause },
  );
}

/** @internal Throw an `INVALID_OPTIONS` error naming the gate option at fault. */
export function invalidOption(option: string, why: string): never {
  throw optionError('hookgate', option, why);
}

/** @internal What was thrown, as text for a message: anything may be thrown, `null` included. */
export function messageOf(error: unknown): string {
  try {
    // An Error's message may be anything a getter returns, or throws.
    if (!(error instanceof Error)) return String(error);
    const message: unknown = error.message;
    return typeof message === 'string'
      ? message
      : `${String(error.name)} (its message is not text)`;
  } catch {
    return typeof error;
  }
}

/**
 * @internal What a store answered that its contract does not allow (`'OK'` for a claim,
 * `undefined` for a done): thrown where the store call failed, so that the gate fails closed
 * (`StoreUnavailableError`) rather than guess.
 */
export function unreadableAnswer(operation: string, answer: unknown): TypeError {
  const shown =
    typeof answer === 'string'
      ? JSON.stringify(answer.slice(0, 40))
      : answer === null || typeof answer !== 'object'
        ? typeof answer === 'function' || typeof answer === 'symbol'
          ? `a ${typeof answer}`
          : String(answer)
        : 'an object';
  return new TypeError(`the store answered ${shown}, which is not an answer to ${operation}`);
}

/** @internal A store's answer that must be a boolean (`done`, `release`, `extend`…), checked. */
export function booleanAnswer(operation: string, answer: unknown): boolean {
  if (typeof answer !== 'boolean') throw unreadableAnswer(operation, answer);
  return answer;
}

/** A {@link StoreUnavailableError} from {@link createError}, `cause` kept. */
function unavailable(owner: string, message: string, cause?: unknown): StoreUnavailableError {
  return createError(
    owner,
    ErrorCode.STORE_UNAVAILABLE,
    message,
    cause === undefined ? undefined : { cause },
  ) as StoreUnavailableError;
}

/** @internal Whatever a store threw, as a `StoreUnavailableError`; hookgate errors stay as they are. */
export function toStoreError(error: unknown, operation: string): HookgateError {
  if (error instanceof HookgateError) return error;
  return unavailable('hookgate', `store ${operation} failed: ${messageOf(error)}`, error);
}

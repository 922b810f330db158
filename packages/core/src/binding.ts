import { admitBatch } from './admit-batch.js';
import { ABORTED, type Admission, admission, refusal, TOO_LARGE } from './answers.js';
import type { Claim } from './claim.js';
import { reporterOf } from './decisions.js';
import { createError, ErrorCode, type HookgateError, invalidOption } from './errors.js';
import { type Gate, isThenable } from './gate.js';
import { answered, answerOf } from './store.js';
import type { Delivery, HeaderBag } from './types.js';

/**
 * Checks a delivery's signature over the exact body bytes. Resolve `true` to accept; anything
 * else (or a throw) answers 401, claims nothing, and is reported as the decision `unverified`.
 */
export type Verify<TBody = Uint8Array, THeaders = HeaderBag> = (
  rawBody: TBody,
  headers: THeaders,
) => boolean | Promise<boolean>;

/** The options every framework binding's `hookgate()` takes. */
export interface BindingOptions<TPayload = unknown, TBody = Uint8Array, THeaders = HeaderBag> {
  /** The gate that claims each delivery. */
  gate: Gate<TPayload>;
  /**
   * Verifies the signature before anything is claimed: never dedupe an unauthenticated body.
   * Required; `false` is an explicit opt-out (for a route that is authenticated otherwise).
   */
  verify: Verify<TBody, THeaders> | false;
  /**
   * A delivery whose event is being handled elsewhere right now: `'retry'` answers 409 with
   * `Retry-After`, so the provider comes back once the first attempt settled; `'ack'` answers
   * 200 (the event is lost if that first attempt then fails).
   * @default 'retry'
   */
  inFlight?: 'retry' | 'ack';
  /** The largest body accepted, in bytes; a larger one answers 413. @default 1_048_576 (1 MiB) */
  limit?: number;
  /** The `Retry-After` of a 409 (in flight) or 503 (store unavailable), in seconds. @default 10 */
  retryAfter?: number;
}

/** A binding's options, checked and with their defaults. */
export type ResolvedBindingOptions<TPayload, TBody, THeaders> = Required<
  BindingOptions<TPayload, TBody, THeaders>
>;

/**
 * For binding authors: check a `hookgate()` call's options and fill in the defaults. A wrong
 * option throws `INVALID_OPTIONS` naming it, when the middleware is built.
 * @param binding - the binding's name for messages, e.g. `'hookgate/express'`
 */
export function bindingOptions<TPayload, TBody, THeaders>(
  binding: string,
  options: BindingOptions<TPayload, TBody, THeaders>,
): ResolvedBindingOptions<TPayload, TBody, THeaders> {
  const { gate, verify, inFlight = 'retry', limit = 1_048_576, retryAfter = 10 } = options ?? {};
  const fail = (option: string, why: string) => invalidOption(option, `${why} (${binding})`);
  if (typeof gate?.claim !== 'function') fail('gate', 'must be a Gate from createGate()');
  if (verify !== false && typeof verify !== 'function') {
    fail('verify', 'is required: a signature check, or `false` to opt out explicitly');
  }
  if (inFlight !== 'retry' && inFlight !== 'ack') fail('inFlight', "must be 'retry' or 'ack'");
  if (!Number.isSafeInteger(limit) || limit <= 0) fail('limit', 'must be a positive integer');
  if (!Number.isSafeInteger(retryAfter) || retryAfter < 0) {
    fail('retryAfter', 'must be a non-negative integer of seconds');
  }
  return { gate, verify, inFlight, limit, retryAfter };
}

/**
 * For binding authors: everything between reading the raw body and running the handler, the
 * same for every framework. Answers a body over the limit (413) or cut off (400), verifies the
 * signature (401), claims the delivery, and maps what cannot go on to its answer: invalid
 * (400), duplicate or stale (200), in flight (409 with `Retry-After`, or 200 with
 * `inFlight: 'ack'`), a payload conflict (422), store unavailable (503 with `Retry-After`).
 * Every answer is reported to the gate's `onDecision` (`too-large`, `aborted` and `unverified`
 * by this function, the rest by the gate).
 * When it returns a `claim`, the binding runs the handler and settles the claim with
 * {@link settleFromResponse}.
 *
 * When `verify` answered synchronously (or is `false`) and the gate's claim was answered at once
 * (a `MemoryStore`; not a batch, not an acquired claim under the sequence guard), the promise
 * is made by {@link answered}: a binding may read it with {@link answerOf} and go on in the
 * same turn. `await` works the same either way.
 * @param rawBody - the exact body bytes, or why there are none (what a body reader returns)
 */
export function admit<TPayload, TBody extends Uint8Array, THeaders extends HeaderBag>(
  options: ResolvedBindingOptions<TPayload, TBody, THeaders>,
  rawBody: TBody | 'too-large' | 'aborted',
  headers: THeaders,
): Promise<Admission<TPayload>> {
  const { gate, verify } = options;
  if (rawBody === 'too-large' || rawBody === 'aborted') {
    reporterOf(gate)(rawBody);
    return answered({ answer: rawBody === 'too-large' ? TOO_LARGE : ABORTED });
  }
  if (verify === false) return claimed(options, rawBody, headers);
  let verdict: unknown;
  let later: boolean;
  try {
    verdict = verify(rawBody, headers);
    later = isThenable(verdict); // reads `then`, which a hostile verdict's getter may throw from
  } catch (error) {
    return answered(unverified(gate, { reason: 'threw', error }));
  }
  if (!later) return verified(options, verdict, rawBody, headers);
  return Promise.resolve(verdict).then(
    (value) => verified(options, value, rawBody, headers),
    (error: unknown) => unverified(gate, { reason: 'threw', error }),
  );
}

/** After `verify` answered `verdict`: claim the delivery, or answer 401. */
function verified<TPayload, TBody, THeaders extends HeaderBag>(
  options: ResolvedBindingOptions<TPayload, TBody, THeaders>,
  verdict: unknown,
  rawBody: TBody,
  headers: THeaders,
): Promise<Admission<TPayload>> {
  if (verdict === true) return claimed(options, rawBody, headers);
  return answered(
    unverified(options.gate, { reason: verdict === false ? 'rejected' : 'not-true' }),
  );
}

/** 401, reported as `unverified` with why. */
function unverified<TPayload>(
  gate: Gate<TPayload>,
  failure: { reason: string; error?: unknown },
): Admission<TPayload> {
  reporterOf(gate)('unverified', undefined, failure);
  return { answer: { status: 401, body: { status: 'unauthorized' }, headers: {} } };
}

/**
 * Claim a verified delivery and map what cannot go on to its answer. Answered at once (see
 * `answered`) when the gate's claim was.
 */
function claimed<TPayload, TBody, THeaders extends HeaderBag>(
  { gate, inFlight, retryAfter }: ResolvedBindingOptions<TPayload, TBody, THeaders>,
  rawBody: TBody,
  headers: THeaders,
): Promise<Admission<TPayload>> {
  const delivery = { rawBody, headers } as Delivery;
  if (gate.batched) return admitBatch(gate, inFlight, retryAfter, delivery);
  const claiming = claimOf(gate, delivery);
  const claim = answerOf(claiming);
  if (claim !== undefined) return answered(admission(claim, inFlight, retryAfter));
  return claiming.then(
    (claim) => admission(claim, inFlight, retryAfter),
    (error: unknown) => refusal(error, retryAfter),
  );
}

/** `gate.claim`, whose throw (a gate of another making may throw rather than reject) is a rejection. */
function claimOf<TPayload>(gate: Gate<TPayload>, delivery: Delivery): Promise<Claim<TPayload>> {
  try {
    return gate.claim(delivery);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * For binding authors: the error of a request whose body a parser consumed before the binding
 * could read its bytes (a misconfiguration the binding cannot see when it is built). Reports
 * the decision `misconfigured` with it; throw it, and the framework answers 500.
 * @param owner - the binding's name, e.g. `'@hookgate/express'`
 * @param message - how to fix it in that framework
 */
export function bodyConsumed(gate: Gate<unknown>, owner: string, message: string): HookgateError {
  const error = createError(owner, ErrorCode.INVALID_OPTIONS, message);
  reporterOf(gate)('misconfigured', undefined, { error });
  return error;
}

/**
 * For binding authors: settle a claim from what the client was answered. A 2xx marks it done
 * (a store failure is tried once more, inside `done`): the provider has its 2xx and will not
 * retry, so an unrecorded done would let a redelivery run the event again once the claim
 * expires. Anything else fails it (release or retain, per `onFailure`), with `error` as the
 * cause when the handler threw. Pass the status that reached the wire, not one an error
 * handler set afterwards. Never rejects: a lost lease or a store failure here has already been
 * reported through the gate's `onDecision`.
 */
export function settleFromResponse(claim: Claim, status: number, error?: unknown): Promise<void> {
  // Not `async`: one promise per settlement, not an async frame and its promise besides (this
  // runs for every delivery a binding hands on).
  let settling: Promise<void>;
  try {
    settling =
      status >= 200 && status < 300
        ? claim.done()
        : claim.fail(error ?? new Error(`handler answered ${status}`));
  } catch {
    return settledQuietly; // reported by the gate (a gate of another making may throw)
  }
  return Promise.resolve(settling).then(undefined, ignore); // reported by the gate
}

const settledQuietly = Promise.resolve();
const ignore = () => {};

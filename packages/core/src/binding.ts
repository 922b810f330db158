import { mapConcurrently } from './batch.js';
import { reporterOf } from './decisions.js';
import {
  createError,
  ErrorCode,
  type HookgateError,
  InvalidDeliveryError,
  invalidOption,
  LeaseLostError,
  StoreUnavailableError,
} from './errors.js';
import { type Claim, type Gate, heldBack, isThenable } from './gate.js';
import { sha256 } from './sha256.js';
import { answered, answerOf } from './store.js';
import type { Delivery, HeaderBag, WebhookEvent } from './types.js';

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

/** An HTTP answer a binding gives without running the handler. */
export interface Answer {
  /** The status code. */
  status: number;
  /** A small JSON body: `{ status }`, plus the `reason` of an invalid delivery. */
  body: {
    /**
     * `unauthorized`, `invalid`, `duplicate`, `stale`, `in-flight`, `conflict`, `unavailable`,
     * `too-large` or `aborted`.
     */
    status: string;
    /** For `invalid`: the `InvalidDeliveryError` reason. */
    reason?: string;
  };
  /** Headers to set (`Retry-After` on 409 and 503). */
  headers: Record<string, string>;
}

/** What {@link admit} decided: answer the request now, or run the handler under `claim`. */
export type Admission<TPayload> =
  | {
      /** Answer the request with this; the handler does not run. */
      answer: Answer;
      /** Absent when there is an answer. */
      claim?: never;
    }
  | {
      /** Absent when there is a claim. */
      answer?: never;
      /** The claim the handler runs under; settle it with {@link settleFromResponse}. */
      claim: Claim<TPayload>;
    };

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

/** The answer to a body over the `limit`. */
export const TOO_LARGE: Answer = {
  status: 413,
  body: { status: 'too-large' },
  headers: { Connection: 'close' },
};

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

/** What a claim lets the binding do: run the handler, or answer. */
function admission<TPayload>(
  claim: Claim<TPayload>,
  inFlight: 'retry' | 'ack',
  retryAfter: number,
): Admission<TPayload> {
  if (claim.acquired) return { claim };
  if (claim.status === 'conflict') {
    return { answer: { status: 422, body: { status: 'conflict' }, headers: {} } };
  }
  // A different event waiting for its subject is answered 409 even with 'ack': nobody else
  // will process it.
  if (claim.status === 'in-flight' && (inFlight === 'retry' || heldBack(claim))) {
    return inFlightAnswer(retryAfter);
  }
  return { answer: { status: 200, body: { status: claim.status }, headers: {} } };
}

/**
 * The answer to a delivery the gate refused with an error: 400 for an invalid one, 503 (with
 * `Retry-After`) for a store failure, 409 for a claim another owner took meanwhile (a body's,
 * see `newestPerSubject`); any other error is thrown. Built only when needed: the path of a
 * new event allocates none of it.
 */
function refusal<TPayload>(error: unknown, retryAfter: number): Admission<TPayload> {
  if (error instanceof LeaseLostError) return inFlightAnswer(retryAfter);
  if (error instanceof InvalidDeliveryError) {
    return {
      answer: { status: 400, body: { status: 'invalid', reason: error.reason }, headers: {} },
    };
  }
  if (error instanceof StoreUnavailableError) {
    return {
      answer: {
        status: 503,
        body: { status: 'unavailable' },
        headers: { 'Retry-After': String(retryAfter) },
      },
    };
  }
  throw error;
}

/** 409 with `Retry-After`: the event is in flight elsewhere. */
function inFlightAnswer<TPayload>(retryAfter: number): Admission<TPayload> {
  return {
    answer: {
      status: 409,
      body: { status: 'in-flight' },
      headers: { 'Retry-After': String(retryAfter) },
    },
  };
}

/** How many events of one body are claimed at once. */
const BATCH_CONCURRENCY = 8;

/**
 * A body of many events: claim each, and hand on the new ones together, or answer for all.
 * The provider resends a body as a whole, so the answer is 2xx only when every event is
 * settled for good (new, a duplicate, stale or a conflict); an event in flight elsewhere
 * (409), an invalid one (400) or a store failure (503) releases the claims taken, and the
 * resent body finds the events done meanwhile as duplicates.
 */
async function admitBatch<TPayload>(
  gate: Gate<TPayload>,
  inFlight: 'retry' | 'ack',
  retryAfter: number,
  delivery: Delivery,
): Promise<Admission<TPayload>> {
  let events: Delivery[];
  try {
    events = gate.split(delivery);
  } catch (error) {
    return refusal(error, retryAfter);
  }
  const claimAt = (i: number): Promise<Attempt<TPayload>> =>
    claimOf(gate, events[i]!).catch((error: unknown) => ({ error }));
  const attempts = await newestPerSubject(
    await mapConcurrently(
      events.map((_, i) => i),
      BATCH_CONCURRENCY,
      claimAt,
    ),
    claimAt,
  );
  const claims = attempts.filter((a): a is Claim<TPayload> => !('error' in a));
  const acquired = claims.filter((c) => c.acquired);
  const failure = attempts.find((a) => 'error' in a);
  // A second copy of an event in the body finds the first copy's claim: not in flight
  // elsewhere when the first was acquired, or ended stale or done. (A conflict may be another
  // worker's claim of the key, in flight.)
  const own = new Set(
    claims
      .filter((c) => c.acquired || c.status === 'stale' || c.status === 'duplicate')
      .map((c) => c.key),
  );
  const blocked = claims.some(
    (c) => c.status === 'in-flight' && !own.has(c.key) && (inFlight === 'retry' || heldBack(c)),
  );
  if (failure !== undefined || blocked) {
    await Promise.all(acquired.map((c) => c.release().catch(() => {})));
    if (failure !== undefined) return refusal((failure as { error: unknown }).error, retryAfter);
    return inFlightAnswer(retryAfter);
  }
  if (acquired.length === 0) {
    const status =
      claims.every((c) => c.status === 'stale') && claims.length > 0 ? 'stale' : 'duplicate';
    return { answer: { status: 200, body: { status }, headers: {} } };
  }
  return { claim: new BatchClaim(acquired) as unknown as Claim<TPayload> };
}

type Attempt<TPayload> = Claim<TPayload> | { error: unknown };

/**
 * Under the sequence guard, a body's events of one subject hold each other back: the first one
 * claimed holds the subject, and the others are `held`, on every attempt of the body. Resolve
 * it as if the newest had come first: it is the one applied (on a tie, the one holding the
 * subject), and the others meet its watermark as `stale`. When the newest was held, the body's
 * claim of the subject is released and the newest claimed again first. Under `ties: 'apply'`,
 * an event tied with the applied one is `held` again: the body is answered 409 until a body
 * without the tie comes.
 */
async function newestPerSubject<TPayload>(
  attempts: Attempt<TPayload>[],
  claimAt: (i: number) => Promise<Attempt<TPayload>>,
): Promise<Attempt<TPayload>[]> {
  const groups = new Map<string, { holder?: number; held: number[] }>();
  const group = (subject: string) => {
    let found = groups.get(subject);
    if (found === undefined) {
      found = { held: [] };
      groups.set(subject, found);
    }
    return found;
  };
  attempts.forEach((attempt, i) => {
    if ('error' in attempt || attempt.event.subject === undefined) return;
    if (attempt.acquired) group(attempt.event.subject).holder = i;
    else if (heldBack(attempt)) group(attempt.event.subject).held.push(i);
  });
  const result = attempts.slice();
  const at = (i: number) => (result[i] as Claim).event.occurredAt ?? Number.NEGATIVE_INFINITY;
  await Promise.all(
    [...groups.values()].map(async ({ holder, held }) => {
      if (holder === undefined || held.length === 0) return;
      // Oldest first; on a tie, the event that holds the subject last (it stays applied).
      const members = [holder, ...held].sort(
        (a, b) => at(a) - at(b) || (a === holder ? 1 : b === holder ? -1 : a - b),
      );
      const newest = members.pop()!;
      if (newest !== holder) {
        const released = await (result[holder] as Claim).release().then(
          () => undefined,
          (error: unknown) => ({ error }),
        );
        if (released !== undefined) {
          result[holder] = released;
          return;
        }
        result[newest] = await claimAt(newest);
      }
      for (const i of members) result[i] = await claimAt(i);
    }),
  );
  return result;
}

/** The claims of a body's new events, settled together from one answer. */
class BatchClaim implements Claim<unknown[]> {
  readonly status = 'acquired';
  readonly acquired = true;
  readonly key: string;
  readonly source = 'digest';
  readonly event: WebhookEvent<unknown[]>;
  readonly #claims: readonly Claim[];

  constructor(claims: readonly Claim[]) {
    this.#claims = claims;
    const events = claims.map((c) => c.event);
    this.key = `dig:${sha256(events.map((e) => e.key).join('\n'))}`;
    this.event = { key: this.key, source: 'digest', payload: events.map((e) => e.payload), events };
  }

  done(): Promise<void> {
    return this.#each((c) => c.done());
  }

  release(): Promise<void> {
    return this.#each((c) => c.release());
  }

  fail(error?: unknown): Promise<void> {
    return this.#each((c) => c.fail(error));
  }

  extend(ms?: number): Promise<void> {
    return this.#each((c) => c.extend(ms));
  }

  /** Settle every claim, even when one fails; then reject with the first failure. */
  async #each(settle: (claim: Claim) => Promise<void>): Promise<void> {
    const results = await Promise.allSettled(this.#claims.map(settle));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
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

/** The answer to a client that went away before its body ended (nothing was claimed). */
export const ABORTED: Answer = {
  status: 400,
  body: { status: 'aborted' },
  headers: { Connection: 'close' },
};

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

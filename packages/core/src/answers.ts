/**
 * The HTTP answers a binding gives without running the handler, and which one a refused claim
 * or a gate's error gets.
 */
import { type Claim, heldBack } from './claim.js';
import { InvalidDeliveryError, LeaseLostError, StoreUnavailableError } from './errors.js';

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

/** The answer to a body over the `limit`. */
export const TOO_LARGE: Answer = {
  status: 413,
  body: { status: 'too-large' },
  headers: { Connection: 'close' },
};

/** The answer to a client that went away before its body ended (nothing was claimed). */
export const ABORTED: Answer = {
  status: 400,
  body: { status: 'aborted' },
  headers: { Connection: 'close' },
};

/** @internal What a claim lets the binding do: run the handler, or answer. */
export function admission<TPayload>(
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
 * @internal The answer to a delivery the gate refused with an error: 400 for an invalid one,
 * 503 (with `Retry-After`) for a store failure, 409 for a claim another owner took meanwhile (a
 * body's, see `newestPerSubject`); any other error is thrown. Built only when needed: the path
 * of a new event allocates none of it.
 */
export function refusal<TPayload>(error: unknown, retryAfter: number): Admission<TPayload> {
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

/** @internal 409 with `Retry-After`: the event is in flight elsewhere. */
export function inFlightAnswer<TPayload>(retryAfter: number): Admission<TPayload> {
  return {
    answer: {
      status: 409,
      body: { status: 'in-flight' },
      headers: { 'Retry-After': String(retryAfter) },
    },
  };
}

/** Request headers as Node.js (`IncomingHttpHeaders`) or the Fetch API (`Headers`) gives them. */
export type HeaderBag = Record<string, string | string[] | undefined> | Headers;

/** One delivery of a webhook, as the HTTP layer (or a queue consumer) received it. */
export interface Delivery {
  /**
   * The parsed JSON body. When it is `undefined` and `rawBody` is set, the gate parses
   * `rawBody` itself (strict UTF-8, then `JSON.parse`), and function selectors see a delivery
   * with `payload` filled in.
   */
  payload?: unknown;
  /** Request headers; names are matched case-insensitively. */
  headers?: HeaderBag;
  /** The exact body bytes (or text) as received, which signatures are computed over. */
  rawBody?: Uint8Array | string;
}

/**
 * Where to read a field of a delivery: a dotted payload path (`'data.object.id'`), a header
 * (`{ header: 'X-Event-Id' }`, case-insensitive), or a function of the delivery (its `payload`
 * parsed from `rawBody` when only the bytes were given).
 */
export type Selector =
  | string
  | {
      /** A header name, matched case-insensitively. */
      readonly header: string;
    }
  | ((delivery: Delivery) => unknown);

/** How the idempotency key was derived: the provider's own event id, or a payload digest. */
export type KeySource = 'event-id' | 'digest';

/** What the handler is given: the event behind the delivery. */
export interface WebhookEvent<TPayload = unknown> {
  /**
   * The idempotency key (without the namespace): `evt:<id>`, `evt:#<sha256 hex>` for an id that
   * is not plain, or `dig:<sha256 hex>`.
   */
  key: string;
  /** How `key` was derived. */
  source: KeySource;
  /** The parsed payload. */
  payload: TPayload;
  /** The subject the event is about (a grant, a customer, …), when a `subject` selector found one. */
  subject?: string;
  /** The provider's event time in epoch milliseconds, when an `occurredAt` selector found one. */
  occurredAt?: number;
  /** The claim the handler runs under, once it is acquired (see {@link EventLease}). */
  lease?: EventLease;
  /**
   * Set by the bindings on a body that carries many events (a gate with `split`): the new
   * events in it, each claimed, which the handler processes. `payload` is then their payloads,
   * in order, and `key` a digest of their keys. The body's other events were duplicates, stale
   * or conflicts (or, with the binding's `inFlight: 'ack'`, in flight elsewhere).
   */
  events?: readonly WebhookEvent[];
}

/**
 * The claim a handler runs under: what a handler wrapper needs to record the event in the same
 * transaction as its effects, fenced by the owner token (`@hookgate/pg` does), and the
 * fencing token a handler can pass to other systems.
 */
export interface EventLease {
  /** The store key of the claim: `<namespace>:<event key>`. */
  readonly key: string;
  /** The claim's owner token. A record of the key that holds another token is not ours. */
  readonly token: string;
  /** The done TTL in force, in ms: how long a done record of this event must live. */
  readonly doneTtlMs: number;
  /**
   * The payload fingerprint the claim carries (a gate with `fingerprint: true`), for a done
   * record written on the gate's behalf (`@hookgate/pg`'s `store.transaction`) to keep.
   */
  readonly fingerprint?: string;
}

/** What `gate.run` resolved to. A rejected promise covers every other case. */
export type Outcome<TResult = unknown> =
  | {
      /** The handler ran and the claim is done. */
      status: 'processed';
      /** The idempotency key. */
      key: string;
      /** What the handler returned. */
      result: TResult;
    }
  | {
      /** Already processed: acknowledge, the handler did not run. */
      status: 'duplicate';
      /** The idempotency key. */
      key: string;
    }
  | {
      /**
       * Another worker holds the claim right now, or (sequence guard) another event holds the
       * subject: answer so that the provider retries later.
       */
      status: 'in-flight';
      /** The idempotency key. */
      key: string;
    }
  | {
      /**
       * Older than the subject's watermark (or as old, under the default `ties: 'drop'`):
       * acknowledge, the handler did not run.
       */
      status: 'stale';
      /** The idempotency key. */
      key: string;
    }
  | {
      /**
       * The key is known with another payload (the `fingerprint` option): the handler did not
       * run. A wrong `eventId`, an id the provider reused, or an altered replay; answer 422.
       */
      status: 'conflict';
      /** The idempotency key. */
      key: string;
    };

/**
 * What `gate.runBatch` resolved to for one delivery: its {@link Outcome}, or `failed` when the
 * handler threw, the delivery was invalid or the store failed (the claim, if any, was released
 * or retained as `onFailure` says).
 */
export type BatchResult<TResult = unknown> =
  | Outcome<TResult>
  | {
      /** The delivery was not processed; retry it. */
      status: 'failed';
      /** What `gate.run` threw for it. */
      error: unknown;
    };

/** Every decision the gate takes, as reported to `onDecision`. */
export type Decision =
  | 'new'
  | 'duplicate'
  | 'in-flight'
  | 'stale'
  | 'conflict'
  | 'done'
  | 'released'
  | 'retained'
  | 'lease-lost'
  | 'invalid'
  | 'store-unavailable'
  | 'forgotten'
  | 'unverified'
  | 'too-large'
  | 'aborted'
  | 'misconfigured';

/** A structured record of one decision, for logs, metrics and audits. */
export interface DecisionEvent {
  /** What the gate decided. */
  decision: Decision;
  /** The gate's namespace. */
  namespace: string;
  /** The preset's name, else the gate's `name` option, when either is set. */
  provider?: string;
  /** The idempotency key, when it could be derived. */
  key?: string;
  /** How `key` was derived. */
  source?: KeySource;
  /** The subject the event is about, when known. */
  subject?: string;
  /** The provider's event time, epoch milliseconds. */
  occurredAt?: number;
  /**
   * For `invalid`: the `InvalidDeliveryError` reason. For `unverified`: `rejected` (verify
   * resolved `false`), `threw` (it threw; see `error`) or `not-true` (it resolved something
   * other than a boolean: `verify` must resolve exactly `true`). For `store-unavailable`: the
   * store operation that failed: `claim` or `advance` (nothing ran: 503), `done` or `release`
   * (the handler ran; tried again in the background for `claimTtlMs` after the failure),
   * `extend` (a heartbeat beat or
   * `claim.extend`), `releaseHold`, `inspect` or `forget`.
   */
  reason?: string;
  /**
   * For `released`, `retained`, `lease-lost`, `invalid`, `store-unavailable`, `misconfigured`
   * and an `unverified` whose `verify` threw: what went wrong.
   */
  error?: unknown;
  /**
   * For `done`, `released` and `retained`, and a `duplicate` that a handler wrapper found
   * already done (`alreadyDone()`, as `PostgresLedger` does): milliseconds from the claim to its
   * settlement.
   */
  durationMs?: number;
  /**
   * For `conflict`: the first 12 hex characters of the payload fingerprint the key's record
   * carries (`stored`) and of the delivery's (`received`).
   */
  fingerprints?: {
    /** The fingerprint the key's record carries (first 12 hex characters). */
    stored: string;
    /** The fingerprint of the delivery refused (first 12 hex characters). */
    received: string;
  };
  /** When the decision was taken, epoch milliseconds. */
  at: number;
}

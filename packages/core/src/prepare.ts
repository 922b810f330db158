import type { Report } from './decisions.js';
import { InvalidDeliveryError } from './errors.js';
import type { ResolvedGateOptions } from './gate-options.js';
import {
  digestOf,
  idString,
  keyOf,
  payloadOf,
  plainOrHashed,
  unreadable,
  withPayload,
} from './key.js';
import type { CompiledSelector } from './select.js';
import { parseTimestamp } from './time.js';
import type { Delivery, WebhookEvent } from './types.js';

/** An event time further ahead than this is refused by the sequence guard (it would poison the watermark). */
const MAX_FUTURE_MS = 24 * 60 * 60_000;

/** @internal A delivery made ready for the store: its event and the keys it touches. */
export interface Prepared<TPayload = unknown> {
  /** The event, as the handler sees it. */
  readonly event: WebhookEvent<TPayload>;
  /** The delivery as the handler gets it (with `payload` parsed when only `rawBody` came). */
  readonly delivery: Delivery;
  /** `<namespace>:<event key>`. */
  readonly claimKey: string;
  /** `<namespace>:seq:<subject>` when the sequence guard is on. */
  readonly subjectKey: string | undefined;
  /** The SHA-256 hex of the payload's canonical JSON, with the `fingerprint` option and an event id. */
  readonly fingerprint: string | undefined;
}

/**
 * @internal Key a delivery: parse it, derive its key, read its subject and time. Refuses it
 * with `InvalidDeliveryError` (reported as `invalid`) when it cannot be gated.
 */
export function prepareDelivery<TPayload>(
  options: ResolvedGateOptions,
  report: Report,
  delivery: Delivery,
): Prepared<TPayload> {
  let event: WebhookEvent<TPayload>;
  let fingerprint: string | undefined;
  try {
    const payload = payloadOf(delivery);
    // Function selectors get the parsed payload even when only the raw body was given.
    delivery = withPayload(delivery, payload);
    const { key, source } = keyOf(options.deriver, payload, delivery);
    event = { key, source, payload: payload as TPayload };
    // A digest key is the payload's fingerprint already.
    if (options.fingerprint && source === 'event-id') fingerprint = digestOf(payload);
    // Without the sequence guard, subject and time only inform the decision events: a
    // selector that throws leaves them out rather than refuse the delivery.
    const needed = options.sequence !== undefined;
    if (options.subject !== undefined) {
      const subject = idString(select(options.subject, payload, delivery, needed));
      if (subject !== undefined) event.subject = subject;
    }
    if (options.occurredAt !== undefined) {
      const raw = select(options.occurredAt, payload, delivery, needed);
      const occurredAt = parseTimestamp(raw);
      if (occurredAt !== undefined) event.occurredAt = occurredAt;
      else if (options.sequence !== undefined) {
        throw new InvalidDeliveryError(
          'bad-timestamp',
          raw === undefined || raw === null
            ? 'delivery has no event time, which the sequence guard needs'
            : 'event time is not an ISO 8601 / RFC 3339 time or unix seconds or milliseconds',
        );
      }
    }
  } catch (error) {
    throw refused(report, unreadable(error));
  }
  let subjectKey: string | undefined;
  if (options.sequence !== undefined) {
    if (event.subject === undefined) {
      throw refused(
        report,
        new InvalidDeliveryError(
          'missing-subject',
          'delivery has no subject, which the sequence guard needs',
        ),
        event,
      );
    }
    if (event.occurredAt! > Date.now() + MAX_FUTURE_MS) {
      throw refused(
        report,
        new InvalidDeliveryError('bad-timestamp', 'event time is more than a day in the future'),
        event,
      );
    }
    subjectKey = `${options.namespace}:seq:${plainOrHashed(event.subject)}`;
  }
  return {
    event,
    delivery,
    claimKey: `${options.namespace}:${event.key}`,
    subjectKey,
    fingerprint,
  };
}

/** Run a selector; when its field is not `needed`, a throw reads as no value. */
function select(
  selector: CompiledSelector,
  payload: unknown,
  delivery: Delivery,
  needed: boolean,
): unknown {
  try {
    return selector(payload, delivery);
  } catch (error) {
    if (needed) throw error;
    return undefined;
  }
}

/** Report an invalid delivery; any other error passes through as it is. */
function refused(report: Report, error: unknown, event?: WebhookEvent): unknown {
  if (error instanceof InvalidDeliveryError) {
    report('invalid', event, { reason: error.reason, error });
  }
  return error;
}

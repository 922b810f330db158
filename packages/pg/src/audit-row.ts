/**
 * What a decision becomes as a row of the decision log: text PostgreSQL accepts, times it can
 * store, an error as its name and message.
 */
import type { DecisionEvent } from '@hookgate/core';

/** One decision, as the columns take it; converted when recorded, so no event is kept. */
export interface Row {
  seq: number;
  at: string;
  decision: string;
  namespace: string;
  provider: string | null;
  key: string | null;
  source: string | null;
  subject: string | null;
  occurredAt: string | null;
  reason: string | null;
  error: string | null;
  durationMs: number | null;
  fingerprints: string | null;
}

/** The longest error or reason text written; longer ones are cut. */
const MAX_TEXT = 2_000;
/** The timestamps PostgreSQL and `Date` agree on: years 1 to 9999. */
const MIN_TIME = -62_135_596_800_000;
const MAX_TIME = 253_402_300_799_999;

/** The event as the columns take it: text PostgreSQL accepts, times it can store. */
export function toRow(seq: number, event: DecisionEvent): Row {
  const fingerprints = event.fingerprints;
  return {
    seq,
    at: timestamp(event.at) ?? new Date().toISOString(),
    decision: text(event.decision) ?? 'unknown',
    namespace: text(event.namespace) ?? '',
    provider: text(event.provider),
    key: text(event.key),
    source: text(event.source),
    subject: text(event.subject),
    occurredAt: timestamp(event.occurredAt),
    reason: text(event.reason, MAX_TEXT),
    error: describeError(event.error),
    durationMs:
      typeof event.durationMs === 'number' && Number.isFinite(event.durationMs)
        ? Math.round(event.durationMs)
        : null,
    fingerprints:
      fingerprints === undefined
        ? null
        : JSON.stringify({
            stored: text(fingerprints.stored),
            received: text(fingerprints.received),
          }),
  };
}

/** A string column: `null` when absent; NUL characters (which `text` refuses) replaced. */
function text(value: unknown, max?: number): string | null {
  if (value === undefined || value === null) return null;
  let string = String(value);
  if (max !== undefined && string.length > max) string = `${string.slice(0, max)}…`;
  return string.includes('\u0000') ? string.replaceAll('\u0000', '\uFFFD') : string;
}

/** An epoch-ms time as ISO text, or `null` when PostgreSQL could not store it. */
function timestamp(ms: number | undefined): string | null {
  if (typeof ms !== 'number' || !(ms >= MIN_TIME && ms <= MAX_TIME)) return null;
  return new Date(ms).toISOString();
}

/** `Name: message` of an error, never its stack; a thrown non-error as a string. */
function describeError(error: unknown): string | null {
  if (error === undefined || error === null) return null;
  try {
    if (typeof error === 'object' && typeof (error as Error).message === 'string') {
      const { name, message } = error as Error;
      return text(`${typeof name === 'string' ? name : 'Error'}: ${message}`, MAX_TEXT);
    }
    return text(
      typeof error === 'object' ? Object.prototype.toString.call(error) : error,
      MAX_TEXT,
    );
  } catch {
    return '(an error that could not be read)';
  }
}

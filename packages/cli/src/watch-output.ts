/**
 * What `hookgate watch` prints: the decisions a log row holds, as a line of text or as JSON,
 * with whatever a payload put in them made harmless for a terminal.
 */
import type { Decision } from '@hookgate/core';

/** Every decision a gate reports, as `--decision` accepts them. */
export const DECISIONS = [
  'new',
  'duplicate',
  'in-flight',
  'stale',
  'conflict',
  'done',
  'released',
  'retained',
  'lease-lost',
  'invalid',
  'store-unavailable',
  'forgotten',
  'unverified',
  'too-large',
  'aborted',
  'misconfigured',
] as const satisfies readonly Decision[];

// A decision added to core without being added here fails to compile.
const everyDecision: Exclude<Decision, (typeof DECISIONS)[number]> extends never ? true : never =
  true;
void everyDecision;

/** One decision of the log, as `--json` prints it: the row's columns, `null`s left out. */
export interface WatchedDecision {
  id: number;
  at: string;
  decision: string;
  namespace: string;
  provider?: string;
  key?: string;
  source?: string;
  subject?: string;
  occurredAt?: string;
  reason?: string;
  error?: string;
  durationMs?: number;
  /** `{ stored, received }` as `PostgresAuditLog` writes it; another writer's JSON as it is. */
  fingerprints?: unknown;
  writer: string;
  seq: number;
}

/** A row as the poll returns it: the snapshot's bounds on every row, the rest `null` when filtered out. */
export interface PolledRow {
  xmin: string;
  xmax: string;
  /** The log's highest id, in the poll's snapshot. */
  newest: string;
  id: string | null;
  decision: string | null;
  /** A `Date`; `pg` gives a number for `infinity` and `-infinity`. */
  at: Date | number;
  namespace: string;
  provider: string | null;
  key: string | null;
  source: string | null;
  subject: string | null;
  occurred_at: Date | number | null;
  reason: string | null;
  error: string | null;
  duration_ms: string | null;
  fingerprints: unknown;
  writer: string;
  seq: string;
}

/** A time column as ISO 8601; `infinity` and `-infinity` as PostgreSQL writes them. */
function isoOf(value: Date | number | string): string {
  if (value instanceof Date && Number.isFinite(value.getTime())) return value.toISOString();
  if (value === Number.POSITIVE_INFINITY) return 'infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-infinity';
  return String(value);
}

export function toDecision(id: number, row: PolledRow): WatchedDecision {
  const decision: WatchedDecision = {
    id,
    at: isoOf(row.at),
    decision: row.decision!,
    namespace: row.namespace,
    writer: row.writer,
    seq: Number(row.seq),
  };
  if (row.provider !== null) decision.provider = row.provider;
  if (row.key !== null) decision.key = row.key;
  if (row.source !== null) decision.source = row.source;
  if (row.subject !== null) decision.subject = row.subject;
  if (row.occurred_at !== null) decision.occurredAt = isoOf(row.occurred_at);
  if (row.reason !== null) decision.reason = row.reason;
  if (row.error !== null) decision.error = row.error;
  if (row.duration_ms !== null) decision.durationMs = Number(row.duration_ms);
  if (row.fingerprints !== null) decision.fingerprints = row.fingerprints;
  return decision;
}

/** The width of the longest decision, `store-unavailable`. */
const DECISION_WIDTH = Math.max(...DECISIONS.map((decision) => decision.length));

/**
 * One decision as a line of text: time, decision, key, provider, then what it says of itself.
 * Keys, subjects and errors come from payloads: control characters are escaped, so that a
 * payload can neither break the line nor send escape sequences to the terminal.
 */
function line(decision: WatchedDecision): string {
  const details: string[] = [];
  if (decision.reason !== undefined) details.push(decision.reason);
  if (decision.error !== undefined) details.push(decision.error);
  if (decision.durationMs !== undefined) details.push(`${decision.durationMs} ms`);
  const fingerprints = decision.fingerprints as { stored?: unknown; received?: unknown };
  if (typeof fingerprints === 'object' && fingerprints !== null) {
    details.push(`stored ${fingerprints.stored}, received ${fingerprints.received}`);
  } else if (fingerprints !== undefined) details.push(JSON.stringify(fingerprints));
  return [
    decision.at,
    decision.decision.padEnd(DECISION_WIDTH),
    decision.key ?? '-',
    decision.provider ?? '-',
    details.join(': '),
  ]
    .join('  ')
    .trimEnd()
    .replace(CONTROL, escapeControl);
}

/**
 * C0 and C1 control characters, DEL included (what a terminal may act on), format characters
 * (bidirectional overrides, which reorder what is shown) and the line and paragraph separators.
 */
const CONTROL = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

function escapeControl(character: string): string {
  const names: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
  const hex = (unit: number) => `\\u${unit.toString(16).padStart(4, '0')}`;
  // A character past U+FFFF (a tag character) is two UTF-16 units: both escaped.
  return (
    names[character] ??
    [...Array(character.length).keys()].map((i) => hex(character.charCodeAt(i))).join('')
  );
}

/**
 * `text` with every control character escaped (`\n`, `\u001b`…): data read from a store or a
 * log, or typed by an operator, can neither break a line nor drive the terminal.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, escapeControl);
}

/**
 * `value` as JSON (indented by `indent`), with the control characters JSON leaves as they are
 * (C1, format characters, the line separators) escaped too. A raw newline in the output is
 * only ever the indentation's: JSON escapes those in strings.
 */
export function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(CONTROL, (character) =>
    character === '\n' ? character : escapeControl(character),
  );
}

/** `decision` as `hookgate watch` prints it: one JSON object (`json`) or one line of text. */
export function formatDecision(decision: WatchedDecision, json: boolean): string {
  return json ? safeJson(decision) : line(decision);
}

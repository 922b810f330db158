/**
 * What a flag's or an argument's value may be, checked before anything connects: a bad one is a
 * `UsageError` (exit 2).
 */
import { deriveKey } from '@hookgate/core';
import { UsageError } from './connect.js';
import { DECISIONS } from './watch.js';

/**
 * An event key as the gate makes them (and `gate.inspect` takes): `evt:` and a plain id (up to
 * 128 of `A-Z a-z 0-9 _ . : @ / + = -`) or `#` and a SHA-256 in hex; `dig:` and a SHA-256.
 */
const EVENT_KEY = /^(?:evt:(?:[A-Za-z0-9_.:@/+=-]{1,128}|#[0-9a-f]{64})|dig:[0-9a-f]{64})$/;

/**
 * Refuse `value` when it reads as an event key (`evt:…`, `dig:…`) the gate could not have made:
 * it would match nothing. `label` starts the message (`--key `, or nothing for an argument).
 */
export function refuseMalformedKey(value: string, label: string): void {
  if (/^(evt|dig):/.test(value) && !EVENT_KEY.test(value)) {
    throw new UsageError(
      `${label}${value} is not an event key (evt:<id> or dig:<sha256 hex>, as Outcome.key gives it); give the provider's event id without evt:`,
    );
  }
}

/** A namespace as the gate accepts it: 1 to 64 of `A-Z a-z 0-9 _ . -`. */
export function checkNamespace(namespace: string): string {
  if (!/^[\w.-]{1,64}$/.test(namespace)) {
    throw new UsageError(
      `--namespace must be 1 to 64 characters of A-Z a-z 0-9 _ . - (got '${namespace}')`,
    );
  }
  return namespace;
}

/**
 * `--key`: an event key as it is, or a provider event id keyed as the gate keys ids. A key the
 * gate could not have made is refused, as `inspect` refuses it.
 */
export function eventKey(value: string): string {
  refuseMalformedKey(value, '--key ');
  if (/^(evt|dig):/.test(value)) return value;
  try {
    return deriveKey({ payload: { id: value } }, { eventId: 'id', digestFallback: false }).key;
  } catch {
    throw new UsageError(
      `--key must be an event key (evt:… or dig:…) or an event id (got '${value}')`,
    );
  }
}

/** `--decision new,done --decision released`: known decisions, each once. */
export function decisionList(values: readonly string[]): string[] {
  const decisions = new Set(values.flatMap((value) => value.split(',')).map((d) => d.trim()));
  for (const decision of decisions) {
    if (!(DECISIONS as readonly string[]).includes(decision)) {
      throw new UsageError(
        `--decision '${decision}' is not a decision (decisions: ${DECISIONS.join(', ')})`,
      );
    }
  }
  return [...decisions];
}

/** A flag's value as an integer from 1 to `max`. */
export function positiveInteger(
  flag: string,
  value: string,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(number >= 1 && number <= max)) {
    throw new UsageError(`--${flag} must be a positive integer (got '${value}')`);
  }
  return number;
}

/** A flag's value as a whole number (0 or more, a safe integer). */
export function wholeNumber(flag: string, value: string): number {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number)) {
    throw new UsageError(`--${flag} must be a whole number (got '${value}')`);
  }
  return number;
}

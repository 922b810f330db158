/**
 * `gate.inspect` and `gate.forget`: what the store holds for one event, and deleting it for a
 * deliberate replay. Both work outside any claim.
 */
import type { Report } from './decisions.js';
import {
  createError,
  ErrorCode,
  foreignValueError,
  invalidOption,
  toStoreError,
} from './errors.js';
import type { ResolvedGateOptions } from './gate-options.js';
import { idString, isEventKey, plainOrHashed } from './key.js';
import { prepareDelivery } from './prepare.js';
import type { Delivery, KeySource } from './types.js';

/**
 * An event, as `gate.inspect` and `gate.forget` take it: a delivery, a provider event id, or
 * an event key (`Outcome.key`).
 */
export type EventTarget =
  | Delivery
  | {
      /** A provider event id. */
      readonly id: string | number;
    }
  | string;

/** What `gate.inspect` found for one event. */
export interface Inspection {
  /** The event key (`evt:…` or `dig:…`), without the namespace. */
  key: string;
  /** No record, a claim in flight, or done (processed, or retained after a failure). */
  state: 'absent' | 'processing' | 'done';
  /** How long the record has left, in ms. */
  ttlMs?: number;
  /** The payload fingerprint the record carries (`fingerprint: true`). */
  fingerprint?: string;
  /**
   * The subject's watermark: the time (epoch ms) and key of the newest event applied, when
   * the gate has the sequence guard, the target is a delivery, and the subject has one.
   */
  watermark?: {
    /** The time of the newest event applied for the subject, epoch ms. */
    at: number;
    /** The key of that event. */
    key: string;
  };
}

/** @internal `gate.inspect`, which documents it. */
export async function inspectEvent(
  options: ResolvedGateOptions,
  report: Report,
  target: EventTarget,
): Promise<Inspection> {
  const { key, claimKey, subjectKey } = locate(options, report, target);
  const { store } = options;
  if (typeof store.inspect !== 'function') throw missing('inspect');
  const [record, mark] = await Promise.all([
    storeCall(report, 'inspect', async () => {
      const found = await store.inspect!(claimKey);
      // A watermark under an event's key was not written there by hookgate.
      if (found.kind === 'watermark') throw foreignValueError('hookgate', 'inspect', claimKey);
      return found;
    }),
    subjectKey === undefined
      ? undefined
      : storeCall(report, 'inspect', () => store.inspect!(subjectKey)),
  ]);
  const inspection: Inspection = { key, state: record.kind };
  if (record.kind !== 'absent') {
    if (record.ttlMs !== undefined) inspection.ttlMs = record.ttlMs;
    if (record.fingerprint !== undefined) inspection.fingerprint = record.fingerprint;
  }
  if (mark?.kind === 'watermark') inspection.watermark = { at: mark.at, key: mark.eventKey };
  return inspection;
}

/** @internal `gate.forget`, which documents it. */
export async function forgetEvent(
  options: ResolvedGateOptions,
  report: Report,
  target: EventTarget,
): Promise<boolean> {
  const { key, claimKey, source } = locate(options, report, target);
  const { store } = options;
  if (typeof store.forget !== 'function') throw missing('forget');
  const forgotten = await storeCall(report, 'forget', () => store.forget!(claimKey));
  if (forgotten) report('forgotten', { key, source, payload: undefined });
  return forgotten;
}

/** The keys of an inspect or forget target. */
function locate(
  options: ResolvedGateOptions,
  report: Report,
  target: EventTarget,
): { key: string; source: KeySource; claimKey: string; subjectKey?: string } {
  const { namespace } = options;
  if (typeof target === 'string') {
    if (!isEventKey(target)) {
      invalidOption(
        'target',
        'must be an event key as Outcome.key gives it (evt:… or dig:…); pass { id } for a provider event id',
      );
    }
    const source = target.startsWith('evt:') ? 'event-id' : 'digest';
    return { key: target, source, claimKey: `${namespace}:${target}` };
  }
  if (typeof target === 'object' && target !== null && 'id' in target) {
    const id = idString(target.id);
    if (id === undefined)
      invalidOption('target', '{ id } needs a non-blank string or a safe integer');
    const key = `evt:${plainOrHashed(id)}`;
    return { key, source: 'event-id', claimKey: `${namespace}:${key}` };
  }
  const prepared = prepareDelivery(options, report, target as Delivery);
  const { key, source } = prepared.event;
  return { key, source, claimKey: prepared.claimKey, subjectKey: prepared.subjectKey };
}

/** A store call outside a claim: its failure is reported and thrown as `StoreUnavailableError`. */
async function storeCall<T>(report: Report, operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const failure = toStoreError(error, operation);
    report('store-unavailable', undefined, { reason: operation, error: failure });
    throw failure;
  }
}

/** The error of `inspect` or `forget` on a store that does not implement it. */
function missing(operation: 'inspect' | 'forget'): Error {
  return createError(
    'hookgate',
    ErrorCode.INVALID_OPTIONS,
    `the store has no ${operation}(): it was written before ClaimStore had one`,
  );
}

import type { Decision, DecisionEvent, WebhookEvent } from './types.js';

/** What a decision event carries besides the event's own fields. */
export interface DecisionDetail {
  reason?: string;
  error?: unknown;
  durationMs?: number;
  fingerprints?: { stored: string; received: string };
}

/** @internal Reports one decision; never throws. */
export type Report = (decision: Decision, event?: WebhookEvent, detail?: DecisionDetail) => void;

/**
 * @internal Build the gate's reporter: it turns a decision into a {@link DecisionEvent} and
 * hands it to `onDecision`, which may throw or reject without ever deciding a delivery's fate.
 * Without a hook, reporting costs one call.
 */
export function createReporter(
  namespace: string,
  provider: string | undefined,
  hook: ((event: DecisionEvent) => void) | undefined,
): Report {
  if (hook === undefined) return () => {};
  return (decision, event, detail) => {
    const record: DecisionEvent = { decision, namespace, at: Date.now() };
    if (provider !== undefined) record.provider = provider;
    if (event !== undefined) {
      record.key = event.key;
      record.source = event.source;
      if (event.subject !== undefined) record.subject = event.subject;
      if (event.occurredAt !== undefined) record.occurredAt = event.occurredAt;
    }
    if (detail !== undefined) Object.assign(record, detail);
    try {
      const result = hook(record) as unknown;
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // A logging hook must never decide the fate of a delivery.
    }
  };
}

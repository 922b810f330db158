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

/** The reporter of each gate `createGate` made, for the bindings' own decisions. */
const reporters = new WeakMap<object, Report>();

/** @internal Remember a gate's reporter. */
export function registerReporter(gate: object, report: Report): void {
  reporters.set(gate, report);
}

/**
 * For authors of gate wrappers (a `Gate` that delegates to another, as `@hookgate/otel`'s
 * `instrumentGate` does): make the decisions a binding reports before the gate sees a delivery
 * (`unverified`, `too-large`, `aborted`, `misconfigured`) reach the wrapped gate's `onDecision`
 * when the wrapper is what the binding was given. Without it they are not reported.
 * @param wrapper - the wrapping gate
 * @param gate - the gate it delegates to
 */
export function forwardDecisions(wrapper: object, gate: object): void {
  const report = reporters.get(gate);
  if (report !== undefined) reporters.set(wrapper, report);
}

/**
 * @internal The reporter of a gate, for a decision a binding takes before the gate sees the
 * delivery (401, 413, a client gone, a consumed body); silent for a gate `createGate` did not
 * make (a wrapper of one).
 */
export function reporterOf(gate: object): Report {
  return reporters.get(gate) ?? (() => {});
}

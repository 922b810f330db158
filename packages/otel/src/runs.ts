import type { Decision, DecisionEvent, KeySource } from '@hookgate/core';
import { type Span, trace } from '@opentelemetry/api';

/** @internal What a `hookgate.run` span learns from the decisions reported while it is active. */
export interface RunState {
  /** The first decision about the delivery (`new`, `duplicate`, …, `store-unavailable`). */
  decision?: Decision;
  /** The provider preset's name, when the gate has one. */
  provider?: string;
  /** The event key, once derived. */
  key?: string;
  /** How the key was derived. */
  source?: KeySource;
  /** The run span, which the handler span also maps to. */
  readonly span: Span;
}

/**
 * @internal The runs in progress, by their span and their handler's span: a decision reported
 * while one of them is the active span belongs to that run.
 */
export const runs = new WeakMap<Span, RunState>();

/** The decisions that say what became of a delivery when it was claimed. */
const ADMISSIONS: ReadonlySet<Decision> = new Set<Decision>([
  'new',
  'duplicate',
  'in-flight',
  'stale',
  'conflict',
  'invalid',
  'store-unavailable',
]);

/**
 * @internal Note a decision on the run it was taken in, if any: the first admission decision
 * and the key become the span's attributes, and every decision is a span event.
 */
export function noteOnRun(event: DecisionEvent): void {
  const active = trace.getActiveSpan();
  if (active === undefined) return;
  const run = runs.get(active);
  // A done retried in the background after the run ended (its store failed twice) runs in the
  // run's context: its span has ended, and takes nothing more.
  if (run === undefined || !run.span.isRecording()) return;
  if (run.decision === undefined && ADMISSIONS.has(event.decision)) {
    run.decision = event.decision;
    if (event.provider !== undefined) run.provider = event.provider;
    if (event.key !== undefined) run.key = event.key;
    if (event.source !== undefined) run.source = event.source;
  }
  run.span.addEvent('hookgate.decision', { 'hookgate.decision': event.decision });
}

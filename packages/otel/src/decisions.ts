import type { DecisionEvent } from '@hookgate/core';
import type { Attributes } from '@opentelemetry/api';
import { instrumentsOf, type TelemetryOptions } from './instruments.js';
import { noteOnRun } from './runs.js';

/**
 * An `onDecision` hook that records every decision: it counts it in `hookgate.decisions`, records
 * the claim-to-settlement time of a settled claim in `hookgate.handler.duration`, and, when the
 * decision is taken inside a `gate.run` of a gate wrapped by {@link instrumentGate}, notes it on
 * that run's span. {@link instrument} installs it (chained with a hook of your own); use it
 * directly to chain it yourself.
 *
 * @example
 * const gate = createGate({ store, onDecision: decisionRecorder({ meterProvider }) });
 */
export function decisionRecorder(telemetry: TelemetryOptions = {}): (event: DecisionEvent) => void {
  const instruments = instrumentsOf(telemetry.meterProvider);
  return function recordDecision(event) {
    noteOnRun(event);
    if (instruments.noop) return;
    const attributes: Attributes = {
      'hookgate.decision': event.decision,
      'hookgate.namespace': event.namespace,
    };
    if (event.provider !== undefined) attributes['hookgate.provider'] = event.provider;
    if (event.source !== undefined) attributes['hookgate.source'] = event.source;
    instruments.decisions.add(1, attributes);
    if (event.durationMs !== undefined) {
      instruments.handlerDuration.record(event.durationMs / 1000, attributes);
    }
  };
}

import type { DecisionEvent, GateOptions } from '@hookgate/core';
import { decisionRecorder } from './decisions.js';
import { instrumentsOf, type TelemetryOptions, tracingOf } from './instruments.js';
import { instrumentStore } from './store.js';

/**
 * Gate options that record OpenTelemetry metrics: the same options, with an `onDecision` that
 * records every decision ({@link decisionRecorder}) before it calls yours, and the store
 * wrapped by {@link instrumentStore}. Pass the result to `createGate`, and the gate to
 * {@link instrumentGate} for a span per `gate.run`.
 *
 * Call it once your SDK is registered: with neither a meter nor a tracer provider behind it at
 * that moment, it adds no hook (a gate with a hook builds a record of every decision), so
 * spans of a tracer provider registered later carry what `run` returns (key, source, decision,
 * outcome) but no decision events and no provider.
 *
 * @example
 * const gate = instrumentGate(createGate(instrument({ store, provider: providers.stripe })));
 * @throws HookgateError `INVALID_OPTIONS` when `options.store` is not a `ClaimStore`.
 */
export function instrument(options: GateOptions, telemetry: TelemetryOptions = {}): GateOptions {
  const store = instrumentStore(options.store, telemetry);
  // With no SDK behind either provider, the gate keeps its own hook: a gate with a hook builds
  // a record of every decision, which is most of what instrumenting would cost. (A meter taken
  // from the API's no-op stays one; spans then take their attributes from what `run` returns.)
  if (instrumentsOf(telemetry.meterProvider).noop && tracingOf(telemetry.tracerProvider).off()) {
    return { ...options, store };
  }
  const record = decisionRecorder(telemetry);
  const own = options.onDecision;
  // A hook that is not a function is left for `createGate` to refuse, naming it.
  const onDecision =
    typeof own === 'function'
      ? (event: DecisionEvent) => {
          try {
            record(event);
          } finally {
            own(event); // a recorder that throws (a faulty meter) must not cost the caller's hook
          }
        }
      : (own ?? record);
  return { ...options, store, onDecision };
}

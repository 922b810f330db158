/**
 * OpenTelemetry for hookgate, on `@opentelemetry/api`: decision counts, handler and store
 * durations, and a span per `gate.run` with the handler's span under it. Every instrument and
 * attribute is listed in docs/observability.md.
 *
 * @packageDocumentation
 * @module @hookgate/otel
 */

export { decisionRecorder } from './decisions.js';
export { instrumentGate } from './gate.js';
export { instrument } from './instrument.js';
export type { TelemetryOptions } from './instruments.js';
export { instrumentStore } from './store.js';

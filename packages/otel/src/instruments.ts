import {
  type Counter,
  createNoopMeter,
  type Histogram,
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';

/** The instrumentation scope every meter and tracer of this package is named by. */
export const SCOPE = '@hookgate/otel';

/** Where the telemetry goes: the providers to take meters and tracers from. */
export interface TelemetryOptions {
  /**
   * Where the metrics go.
   * @default the global one, `metrics.getMeterProvider()` (a no-op until an SDK registers one)
   */
  meterProvider?: MeterProvider;
  /**
   * Where the spans go.
   * @default the global one, `trace.getTracerProvider()` (a no-op until an SDK registers one)
   */
  tracerProvider?: TracerProvider;
}

/** @internal The three instruments, made once per meter provider. */
export interface Instruments {
  readonly decisions: Counter;
  readonly handlerDuration: Histogram;
  readonly storeDuration: Histogram;
  /**
   * The meter is the API's no-op (no SDK was registered when it was taken, and the metrics API
   * has no proxy that would pick one up later): nothing needs measuring.
   */
  readonly noop: boolean;
}

/** Bucket bounds in seconds, after the HTTP server duration's advice, with longer handlers. */
const HANDLER_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 300,
];
/** Bucket bounds in seconds, after the database client operation duration's advice. */
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 2.5, 5, 10];

const made = new WeakMap<MeterProvider, Instruments>();

/** @internal The instruments of `provider` (the global one by default), made on first use. */
export function instrumentsOf(provider: MeterProvider = metrics.getMeterProvider()): Instruments {
  let instruments = made.get(provider);
  if (instruments === undefined) {
    const meter = provider.getMeter(SCOPE);
    instruments = {
      decisions: meter.createCounter('hookgate.decisions', {
        description: 'Decisions the gate took, by decision.',
        unit: '{decision}',
      }),
      handlerDuration: meter.createHistogram('hookgate.handler.duration', {
        description:
          'Time from a claim to its settlement: the handler, then the settling store call.',
        unit: 's',
        advice: { explicitBucketBoundaries: HANDLER_BUCKETS },
      }),
      storeDuration: meter.createHistogram('hookgate.store.operation.duration', {
        description: 'Duration of store operations, by operation and outcome.',
        unit: 's',
        advice: { explicitBucketBoundaries: STORE_BUCKETS },
      }),
      noop: meter === createNoopMeter(),
    };
    made.set(provider, instruments);
  }
  return instruments;
}

/** @internal A tracer, and whether it is the API's no-op at the moment. */
export interface Tracing {
  readonly tracer: Tracer;
  /**
   * Whether the tracer is the API's no-op right now: the global provider (a proxy) has no
   * SDK behind it yet. Asked per call, since an SDK may be registered later.
   */
  readonly off: () => boolean;
}

/** The API's no-op tracer provider, which an empty proxy delegates to. */
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const never = () => false;

/** @internal The tracer of `provider` (the global one by default). */
export function tracingOf(provider: TracerProvider = trace.getTracerProvider()): Tracing {
  const tracer = provider.getTracer(SCOPE);
  if (provider instanceof ProxyTracerProvider) {
    return { tracer, off: () => provider.getDelegate() === NOOP_TRACER_PROVIDER };
  }
  return { tracer, off: provider === NOOP_TRACER_PROVIDER ? () => true : never };
}

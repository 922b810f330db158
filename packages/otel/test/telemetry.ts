/** An in-memory OpenTelemetry SDK per test: a meter provider to collect from, spans to read. */
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

// Parent and child spans need a context manager; the providers themselves are passed explicitly.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

/** A reader that keeps nothing: `collect()` reads the current values on demand. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface Telemetry {
  meterProvider: MeterProvider;
  tracerProvider: BasicTracerProvider;
  /** The data points of one metric, as recorded so far. */
  points(name: string): Promise<DataPoint<unknown>[]>;
  /** The metric's unit and description, or `undefined` when nothing was recorded in it. */
  descriptor(name: string): Promise<{ unit: string; description: string } | undefined>;
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The spans ended so far with this name. */
  named(name: string): ReadableSpan[];
}

export function telemetry(): Telemetry {
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const metric = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const found of scope.metrics) if (found.descriptor.name === name) return found;
    }
    return undefined;
  };
  return {
    meterProvider,
    tracerProvider,
    points: async (name) => (await metric(name))?.dataPoints ?? [],
    descriptor: async (name) => {
      const found = await metric(name);
      return found && { unit: found.descriptor.unit, description: found.descriptor.description };
    },
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
  };
}

/** The value of the counter point whose attributes are exactly `attributes`. */
export async function count(
  t: Telemetry,
  name: string,
  attributes: Record<string, string>,
): Promise<number | undefined> {
  const points = await t.points(name);
  const point = points.find((p) => sameAttributes(p.attributes, attributes));
  if (point === undefined) return undefined;
  const value = point.value as number | { count: number };
  return typeof value === 'number' ? value : value.count;
}

function sameAttributes(a: object, b: object): boolean {
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((k) => (a as Record<string, unknown>)[k] === (b as Record<string, unknown>)[k])
  );
}

/** The attribute sets of a metric's points, sorted, for exact comparison. */
export async function attributeSets(t: Telemetry, name: string): Promise<object[]> {
  const points = await t.points(name);
  return points
    .map((p) => p.attributes)
    .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
}

/**
 * `@hookgate/otel` with no OpenTelemetry SDK registered (the API's no-op providers): the same
 * steady-state `gate.run` over a MemoryStore as the MemoryStore row, with and without the
 * instrumentation (`instrument()` options and `instrumentGate()`), one at a time, in one
 * process. The ratio is what a library that ships instrumented pays while nobody collects.
 */
import { createGate, type Gate, type GateOptions } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { instrument, instrumentGate } from '@hookgate/otel';
import { alternate, asyncSide, type Plan, type Row, type Side } from './measure.js';

const handler = () => 'ok';

export async function otelBench(plan: Plan): Promise<Row[]> {
  let n = 0;
  const side = (wrap: (options: GateOptions) => Gate): Side => {
    let time = 1_000_000_000;
    const gate = wrap({
      store: new MemoryStore({ now: () => time }),
      eventId: 'id',
      doneTtlMs: 80_000,
    });
    return asyncSide(() => {
      time++;
      return gate.run({ payload: { id: 'evt_' + (n++).toString(36) } }, handler);
    }, 1);
  };
  const [instrumented, plain] = await alternate(
    [
      side((options) => instrumentGate(createGate(instrument(options)))),
      side((options) => createGate(options)),
    ],
    plan,
  );
  return [
    {
      section: 'OpenTelemetry',
      name: 'gate.run with @hookgate/otel, no SDK registered (MemoryStore)',
      stats: instrumented!,
      baseline: { name: 'the same gate without it', stats: plain! },
      target: { ratio: 0.97 },
      perCpu: true,
    },
  ];
}

import {
  type BatchOptions,
  type BatchResult,
  type Claim,
  type Decision,
  type Delivery,
  type EventTarget,
  forwardDecisions,
  type Gate,
  type Handler,
  type Inspection,
  type KeySource,
  type Outcome,
  optionError,
  type WebhookEvent,
} from '@hookgate/core';
import {
  type Context,
  context,
  isSpanContextValid,
  type Span,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { type TelemetryOptions, type Tracing, tracingOf } from './instruments.js';
import { type RunState, runs } from './runs.js';
import { messageOf } from './store.js';

/**
 * Wrap a gate so that each `gate.run` is a span, `hookgate.run`, active while the gate keys,
 * claims and settles the delivery, with the handler in a child span, `hookgate.handler`, active
 * while it runs: spans your handler starts nest under it. The run span carries the key, its
 * source, the namespace, the first decision and the outcome as attributes (see
 * docs/observability.md), and ends with an error status when `run` rejects. `runBatch` runs
 * each delivery through the wrapped `run`; `claim`, `split`, `inspect` and `forget` are the
 * gate's own. What `run` resolves or rejects with is unchanged.
 *
 * Parent and child spans need a context manager (every SDK setup registers one); with no SDK
 * at all, `run` is the gate's own: no span is started.
 *
 * @example
 * const gate = instrumentGate(createGate(instrument({ store, provider: providers.stripe })));
 */
export function instrumentGate<TPayload>(
  gate: Gate<TPayload>,
  telemetry: TelemetryOptions = {},
): Gate<TPayload> {
  return new InstrumentedGate(gate, tracingOf(telemetry.tracerProvider));
}

/** What `run` ended with, as the `hookgate.outcome` attribute says it. */
type RunOutcome = Outcome['status'] | 'error';

class InstrumentedGate<TPayload> implements Gate<TPayload> {
  readonly #gate: Gate<TPayload>;
  readonly #tracer: Tracer;
  readonly #off: () => boolean;

  constructor(gate: Gate<TPayload>, tracing: Tracing) {
    this.#gate = gate;
    this.#tracer = tracing.tracer;
    // A binding given this gate reports its own decisions (401, 413, …) through the wrapped one.
    forwardDecisions(this, gate);
    this.#off = tracing.off;
  }

  get namespace(): string {
    return this.#gate.namespace;
  }

  get batched(): boolean {
    return this.#gate.batched;
  }

  run<TResult>(
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>> {
    if (this.#off()) return this.#gate.run(delivery, handler);
    const parent = context.active();
    const span = this.#tracer.startSpan('hookgate.run', undefined, parent);
    // A tracer that keeps nothing and gives the span no identity of its own: nothing to
    // record, nothing to propagate.
    if (!span.isRecording() && addsNothing(span, parent)) return this.#gate.run(delivery, handler);
    return this.#traced(span, parent, delivery, handler);
  }

  async #traced<TResult>(
    span: Span,
    parent: Context,
    delivery: Delivery,
    handler: Handler<TPayload, TResult>,
  ): Promise<Outcome<Awaited<TResult>>> {
    const run: RunState = { span };
    runs.set(span, run);
    let handled = false;
    const tracer = this.#tracer;
    const traced = (event: WebhookEvent<TPayload>, received: Delivery) => {
      handled = true;
      run.key ??= event.key;
      run.source ??= event.source;
      const active = context.active();
      const handlerSpan = tracer.startSpan(
        'hookgate.handler',
        { attributes: { 'hookgate.key': event.key } },
        active,
      );
      runs.set(handlerSpan, run);
      return context.with(trace.setSpan(active, handlerSpan), () =>
        runHandler(handlerSpan, handler, event, received),
      );
    };
    try {
      const outcome = await context.with(trace.setSpan(parent, span), () =>
        this.#gate.run(delivery, traced),
      );
      run.key ??= outcome.key;
      const admission = handled || outcome.status === 'processed' ? 'new' : outcome.status;
      annotate(span, run, admission, outcome.status, this.namespace);
      return outcome as Outcome<Awaited<TResult>>;
    } catch (error) {
      annotate(span, run, handled ? 'new' : admissionOf(error), 'error', this.namespace);
      span.recordException(error instanceof Error ? error : messageOf(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  async runBatch<TResult>(
    deliveries: readonly Delivery[],
    handler: Handler<TPayload, TResult>,
    options: BatchOptions = {},
  ): Promise<BatchResult<Awaited<TResult>>[]> {
    const concurrency = options.concurrency ?? 8;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
      throw optionError('hookgate', 'concurrency', 'must be a positive integer');
    }
    const results = new Array<BatchResult<Awaited<TResult>>>(deliveries.length);
    let next = 0;
    const worker = async () => {
      while (next < deliveries.length) {
        const i = next++;
        results[i] = await this.run(deliveries[i]!, handler).catch(
          (error: unknown): BatchResult<Awaited<TResult>> => ({ status: 'failed', error }),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, deliveries.length) }, worker));
    return results;
  }

  claim(delivery: Delivery): Promise<Claim<TPayload>> {
    return this.#gate.claim(delivery);
  }

  split(delivery: Delivery): Delivery[] {
    return this.#gate.split(delivery);
  }

  inspect(target: EventTarget): Promise<Inspection> {
    return this.#gate.inspect(target);
  }

  forget(target: EventTarget): Promise<boolean> {
    return this.#gate.forget(target);
  }
}

/**
 * A span that is not recording and has no identity of its own (the API's no-op tracer gives
 * the parent's span context, or an invalid one): making it active would change nothing.
 */
function addsNothing(span: Span, parent: Context): boolean {
  const own = span.spanContext();
  return !isSpanContextValid(own) || own.spanId === trace.getSpanContext(parent)?.spanId;
}

/** Run the user's handler in its span, which ends with it (in error when it throws). */
async function runHandler<TPayload, TResult>(
  span: Span,
  handler: Handler<TPayload, TResult>,
  event: WebhookEvent<TPayload>,
  delivery: Delivery,
): Promise<TResult> {
  try {
    return await handler(event, delivery);
  } catch (error) {
    // `alreadyDone()` is how a handler says "done elsewhere": an answer, not a failure.
    if (!(error instanceof Error && error.name === 'AlreadyDone')) {
      span.recordException(error instanceof Error ? error : messageOf(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
    }
    throw error;
  } finally {
    span.end();
  }
}

/** The admission decision behind an error `run` threw before any handler ran. */
function admissionOf(error: unknown): Decision | undefined {
  const name = error instanceof Error ? error.name : undefined;
  if (name === 'InvalidDeliveryError') return 'invalid';
  if (name === 'StoreUnavailableError') return 'store-unavailable';
  return undefined;
}

/** The run span's attributes, once `run` has settled. */
function annotate(
  span: Span,
  run: RunState,
  admission: Decision | undefined,
  outcome: RunOutcome,
  namespace: string,
): void {
  span.setAttribute('hookgate.namespace', namespace);
  if (run.provider !== undefined) span.setAttribute('hookgate.provider', run.provider);
  if (run.key !== undefined) {
    span.setAttribute('hookgate.key', run.key);
    span.setAttribute('hookgate.source', run.source ?? sourceOf(run.key));
  }
  const decision = run.decision ?? admission;
  if (decision !== undefined) span.setAttribute('hookgate.decision', decision);
  span.setAttribute('hookgate.outcome', outcome);
}

/** How an event key was derived, by its prefix. */
function sourceOf(key: string): KeySource {
  return key.startsWith('dig:') ? 'digest' : 'event-id';
}

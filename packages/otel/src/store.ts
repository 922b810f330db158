import { type ClaimStore, optionError } from '@hookgate/core';
import { type Attributes, context, SpanStatusCode, trace } from '@opentelemetry/api';
import { instrumentsOf, type TelemetryOptions, tracingOf } from './instruments.js';

/** Every operation of a `ClaimStore`, as `hookgate.store.operation` names it. */
const OPERATIONS = [
  'claim',
  'done',
  'release',
  'extend',
  'advance',
  'releaseHold',
  'extendHold',
  'inspect',
  'forget',
] as const;

type Operation = (typeof OPERATIONS)[number];
const REQUIRED = OPERATIONS.slice(0, 7);

/**
 * Wrap a store so that each of its operations is timed in `hookgate.store.operation.duration`
 * (by operation, outcome and namespace) and, when a span is recording in the caller's context
 * (the `hookgate.run` span of {@link instrumentGate}, or a server span of yours), traced as a
 * child span `hookgate.store.<operation>`, whose context the store's own client spans
 * (ioredis or pg instrumentation) nest under. The store's answers and errors pass through
 * unchanged; `inspect` and `forget` are there only when the store has them.
 *
 * @throws HookgateError `INVALID_OPTIONS` when `store` is not a `ClaimStore`.
 */
export function instrumentStore(store: ClaimStore, telemetry: TelemetryOptions = {}): ClaimStore {
  for (const operation of REQUIRED) {
    if (typeof store?.[operation] !== 'function') {
      throw optionError('@hookgate/otel', 'store', `must be a ClaimStore (no ${operation}())`);
    }
  }
  const { storeDuration, noop } = instrumentsOf(telemetry.meterProvider);
  const { tracer, off } = tracingOf(telemetry.tracerProvider);
  /** No SDK behind either provider: each operation is the store's own. */
  const quiet = noop ? off : never;

  /** Run one operation, measured and traced unless nobody records anything. */
  function measure<T>(operation: Operation, key: string, call: () => Promise<T>): Promise<T> {
    const active = context.active();
    const traced = trace.getSpan(active)?.isRecording() === true;
    if (noop && !traced) return call();
    const namespace = key.slice(0, key.indexOf(':'));
    const span = traced
      ? tracer.startSpan(
          `hookgate.store.${operation}`,
          {
            attributes: {
              'hookgate.store.operation': operation,
              'hookgate.namespace': namespace,
            },
          },
          active,
        )
      : undefined;
    const started = performance.now();
    const settle = (failed: boolean, error?: unknown) => {
      const attributes: Attributes = {
        'hookgate.store.operation': operation,
        'hookgate.store.outcome': failed ? 'error' : 'ok',
        'hookgate.namespace': namespace,
      };
      try {
        storeDuration.record((performance.now() - started) / 1000, attributes);
        if (span === undefined) return;
        if (failed) {
          span.recordException(error instanceof Error ? error : messageOf(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
        }
        span.end();
      } catch {
        // A meter or tracer that throws (an exporter's bug) must not change what the store
        // answered.
      }
    };
    let result: Promise<T>;
    try {
      result = span === undefined ? call() : context.with(trace.setSpan(active, span), call);
    } catch (error) {
      // A store method that throws synchronously fails like one that rejects.
      settle(true, error);
      return Promise.reject(error);
    }
    return Promise.resolve(result).then(
      (value) => {
        settle(false);
        return value;
      },
      (error: unknown) => {
        settle(true, error);
        throw error;
      },
    );
  }

  // Each method is the store's own call when nobody listens: that costs one check.
  const wrapped: ClaimStore = {
    claim: (key, token, ttlMs, fingerprint) =>
      quiet()
        ? store.claim(key, token, ttlMs, fingerprint)
        : measure('claim', key, () => store.claim(key, token, ttlMs, fingerprint)),
    done: (key, token, ttlMs, fingerprint) =>
      quiet()
        ? store.done(key, token, ttlMs, fingerprint)
        : measure('done', key, () => store.done(key, token, ttlMs, fingerprint)),
    release: (key, token) =>
      quiet()
        ? store.release(key, token)
        : measure('release', key, () => store.release(key, token)),
    extend: (key, token, ttlMs) =>
      quiet()
        ? store.extend(key, token, ttlMs)
        : measure('extend', key, () => store.extend(key, token, ttlMs)),
    advance: (key, request) =>
      quiet()
        ? store.advance(key, request)
        : measure('advance', key, () => store.advance(key, request)),
    releaseHold: (key, token) =>
      quiet()
        ? store.releaseHold(key, token)
        : measure('releaseHold', key, () => store.releaseHold(key, token)),
    extendHold: (key, token, ttlMs) =>
      quiet()
        ? store.extendHold(key, token, ttlMs)
        : measure('extendHold', key, () => store.extendHold(key, token, ttlMs)),
  };
  const { inspect, forget } = store;
  if (typeof inspect === 'function') {
    wrapped.inspect = (key) =>
      quiet() ? inspect.call(store, key) : measure('inspect', key, () => inspect.call(store, key));
  }
  if (typeof forget === 'function') {
    wrapped.forget = (key) =>
      quiet() ? forget.call(store, key) : measure('forget', key, () => forget.call(store, key));
  }
  return wrapped;
}

const never = () => false;

/** @internal A thrown value as a status message. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return typeof error;
  }
}

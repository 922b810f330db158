interface Pending {
  readonly deadline: number;
  readonly reject: (reason: unknown) => void;
}

/**
 * Deadlines for every operation of one store, kept by one coarse interval timer instead of a
 * timer per command (a `setTimeout` per call cost about a quarter of the throughput).
 *
 * All operations get the same timeout, so deadlines arrive in insertion order: the pending set
 * (which iterates in insertion order) is swept from its oldest entry and the sweep stops at the
 * first one still in time. An operation is rejected between `timeoutMs` and `timeoutMs` plus
 * one tick (a tenth of the timeout, at most 200 ms) after it started. The timer is `unref`ed
 * and stops when nothing has been pending for a tick.
 */
export class Deadlines {
  readonly timeoutMs: number;
  readonly #tickMs: number;
  readonly #pending = new Set<Pending>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.#tickMs = Math.min(Math.max(Math.ceil(timeoutMs / 10), 5), 200);
  }

  /**
   * Settle as `work` settles, or reject with a `TimeoutError` once the deadline passed. The
   * work itself is not cancelled: Redis may still apply it, so a timeout means "unknown".
   */
  guard<T>(work: Promise<T>): Promise<T> {
    const pending = this.#pending;
    let entry!: Pending;
    const guarded = new Promise<T>((resolve, reject) => {
      entry = { deadline: performance.now() + this.timeoutMs, reject };
      work.then(
        (value) => {
          if (pending.delete(entry)) resolve(value);
        },
        (error: unknown) => {
          if (pending.delete(entry)) reject(error);
        },
      );
    });
    pending.add(entry);
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#sweep, this.#tickMs);
      this.#timer.unref();
    }
    return guarded;
  }

  /** How many operations are waiting for an answer. */
  get pending(): number {
    return this.#pending.size;
  }

  readonly #sweep = (): void => {
    if (this.#pending.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    const now = performance.now();
    for (const entry of this.#pending) {
      if (entry.deadline > now) break;
      this.#pending.delete(entry);
      entry.reject(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError'));
    }
  };
}

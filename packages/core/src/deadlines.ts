/** An operation waiting for its answer, as {@link Deadlines.start} hands it out. */
export interface PendingOperation {
  /** When its deadline passes, by `performance.now()`. */
  readonly deadline: number;
}

/** One operation waiting for its answer: a link in the list of pending operations. */
interface Pending extends PendingOperation {
  readonly expire: (timeout: DOMException) => void;
  prev: Pending | undefined;
  next: Pending | undefined;
}

/**
 * For store authors: deadlines for every operation of one store, kept by one coarse interval
 * timer instead of a timer per command (a `setTimeout` per call cost about a quarter of the
 * throughput). The Redis and PostgreSQL stores use it.
 *
 * All operations get the same timeout, so deadlines arrive in the order operations start: the
 * pending ones form a list in that order, each unlinked when answered, and the sweep expires
 * them from its oldest end (`guard` rejects, `start`'s caller is told) and stops at the first one
 * still in time. An operation expires between `timeoutMs` and `timeoutMs` plus one tick (a tenth
 * of the timeout, between 5 ms and 200 ms) after it started. The timer is `unref`ed and stops
 * when nothing has been pending for a tick.
 *
 * A linked list rather than a `Set`: adding and deleting an entry per command in a hash set
 * cost about 0.7 µs, more than the rest of the guard.
 */
export class Deadlines {
  /** The deadline of every operation, in ms. */
  readonly timeoutMs: number;
  readonly #tickMs: number;
  /** The oldest pending operation, and the newest. */
  #first: Pending | undefined;
  #last: Pending | undefined;
  #pending = 0;
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
    return new Promise<T>((resolve, reject) => {
      const pending = this.start(reject);
      work.then(
        (value) => {
          if (this.finish(pending)) resolve(value);
        },
        (error: unknown) => {
          if (this.finish(pending)) reject(error);
        },
      );
    });
  }

  /**
   * For an operation that settles its own promise (one that may resend its command, say, where
   * {@link Deadlines.guard} would wrap each attempt in another promise): its deadline starts
   * now, and `expire` is called with a `TimeoutError` if it passes before
   * {@link Deadlines.finish} is called with what this returns.
   */
  start(expire: (timeout: DOMException) => void): PendingOperation {
    const pending: Pending = {
      deadline: performance.now() + this.timeoutMs,
      expire,
      prev: this.#last,
      next: undefined,
    };
    if (this.#last === undefined) this.#first = pending;
    else this.#last.next = pending;
    this.#last = pending;
    this.#pending++;
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#sweep, this.#tickMs);
      (this.#timer as { unref?: () => void }).unref?.(); // not on every runtime
    }
    return pending;
  }

  /**
   * The operation `pending` (what this instance's {@link Deadlines.start} returned) has its
   * answer: `true` when in time (settle it with the answer), `false` when its deadline passed
   * first and expired it (drop the answer). Only the first call for an operation returns `true`.
   */
  finish(pending: PendingOperation): boolean {
    return this.#unlink(pending as Pending); // start() made every PendingOperation a Pending
  }

  /** How many operations are waiting for an answer. */
  get pending(): number {
    return this.#pending;
  }

  /** Take `entry` off the list; `false` when it was off already (its deadline rejected it). */
  #unlink(entry: Pending): boolean {
    const { prev, next } = entry;
    if (prev === undefined ? this.#first !== entry : prev.next !== entry) return false;
    if (prev === undefined) this.#first = next;
    else prev.next = next;
    if (next === undefined) this.#last = prev;
    else next.prev = prev;
    entry.prev = entry.next = undefined;
    this.#pending--;
    return true;
  }

  readonly #sweep = (): void => {
    if (this.#first === undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    const now = performance.now();
    for (
      let entry = this.#first;
      entry !== undefined && entry.deadline <= now;
      entry = this.#first
    ) {
      this.#unlink(entry);
      entry.expire(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError'));
    }
  };
}

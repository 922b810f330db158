/**
 * The provider side: signs events, delivers them over HTTP to random workers, and retries the
 * way providers do (any non-2xx or a failed connection, exponential backoff with jitter,
 * bounded attempts and time). A storm delivers every event several times, some copies at once.
 */
import type { GrantEvent } from './receiver.js';
import { sign } from './receiver.js';
import { inLanes, sleep } from './util.js';

/** Deterministic randomness, so that a failing storm can be replayed from its seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** One HTTP attempt: its status (0 when the connection failed or timed out) and latency. */
export interface Attempt {
  status: number;
  ms: number;
  /** `performance.now()` when the answer came. */
  at: number;
  target: string;
}

export interface ProviderOptions {
  secret: string;
  /** The receivers' URLs; each attempt goes to one picked at random. */
  targets: () => readonly string[];
  rng: () => number;
  /** @default 30 */
  maxAttempts?: number;
  /** Give up on a delivery after this long, in ms. @default 40_000 */
  maxTimeMs?: number;
  /** @default 40 */
  backoffBaseMs?: number;
  /** @default 800 */
  backoffCapMs?: number;
  /** The provider's attempt timeout: an answer later than this is a failed attempt. @default 10_000 */
  attemptTimeoutMs?: number;
}

export interface DeliveryResult {
  ok: boolean;
  attempts: Attempt[];
}

export class Provider {
  /** Every attempt made, in the order answered. */
  readonly attempts: Attempt[] = [];
  readonly #options: Required<ProviderOptions>;

  constructor(options: ProviderOptions) {
    this.#options = {
      maxAttempts: 30,
      maxTimeMs: 40_000,
      backoffBaseMs: 40,
      backoffCapMs: 800,
      attemptTimeoutMs: 10_000,
      ...options,
    };
  }

  /** The signed body of an event. */
  body(event: GrantEvent): string {
    return JSON.stringify(event);
  }

  /** One attempt at `target`, or at a random receiver. */
  async send(
    body: string | Uint8Array,
    target = this.#pick(),
    headers: Record<string, string> = {},
  ): Promise<Attempt> {
    const started = performance.now();
    let status = 0;
    try {
      const res = await fetch(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-signature': this.sign(body),
          ...headers,
        },
        body,
        signal: AbortSignal.timeout(this.#options.attemptTimeoutMs),
      });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = 0;
    }
    const at = performance.now();
    const attempt = { status, ms: at - started, at, target };
    this.attempts.push(attempt);
    return attempt;
  }

  sign(body: string | Uint8Array): string {
    return sign(this.#options.secret, body);
  }

  /** Deliver until a 2xx, retrying with backoff within the attempt and time bounds. */
  async deliver(body: string): Promise<DeliveryResult> {
    const { maxAttempts, maxTimeMs, backoffBaseMs, backoffCapMs, rng } = this.#options;
    const attempts: Attempt[] = [];
    const giveUpAt = performance.now() + maxTimeMs;
    for (let n = 0; n < maxAttempts; n++) {
      const attempt = await this.send(body);
      attempts.push(attempt);
      if (attempt.status >= 200 && attempt.status < 300) return { ok: true, attempts };
      const backoff = Math.min(backoffCapMs, backoffBaseMs * 2 ** n) * (0.5 + rng() / 2);
      if (performance.now() + backoff > giveUpAt) break;
      await sleep(backoff);
    }
    return { ok: false, attempts };
  }

  #pick(): string {
    const targets = this.#options.targets();
    if (targets.length === 0) throw new Error('provider: no receiver to deliver to');
    return targets[Math.floor(this.#options.rng() * targets.length)]!;
  }
}

export interface StormOptions {
  /** Copies of each event, at least 1. */
  copies: (rng: () => number) => number;
  /** The chance that an event's first copies are sent at once (2 or 3 together). @default 0.5 */
  burstChance?: number;
  /** Deliveries in flight at once. @default 32 */
  concurrency?: number;
  /** Called after each delivery settles (e.g. to inject a fault midway). */
  onProgress?: (settled: number, total: number) => void;
}

export interface StormResult {
  /** Deliveries made (copies of events); each is retried until 2xx or the bounds. */
  deliveries: number;
  /** HTTP requests sent, retries included. */
  requests: number;
  /** Deliveries that never got a 2xx within the bounds. */
  failed: number;
  /** Requests by answer (0: connection failed or timed out). */
  statuses: Record<number, number>;
  /** The slowest answer of each status, in ms. */
  slowest: Record<number, number>;
  durationMs: number;
}

/** Deliver every event several times in a shuffled order, some copies concurrently. */
export async function storm(
  provider: Provider,
  events: readonly GrantEvent[],
  rng: () => number,
  options: StormOptions,
): Promise<StormResult> {
  const { copies, burstChance = 0.5, concurrency = 32, onProgress } = options;
  // A job is one copy, or a burst of copies sent at the same moment.
  const jobs: string[][] = [];
  for (const event of events) {
    const body = provider.body(event);
    let left = Math.max(1, copies(rng));
    if (left >= 2 && rng() < burstChance) {
      const burst = Math.min(left, 2 + Math.floor(rng() * 2));
      jobs.push(Array(burst).fill(body));
      left -= burst;
    }
    for (; left > 0; left--) jobs.push([body]);
  }
  for (let i = jobs.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [jobs[i], jobs[j]] = [jobs[j]!, jobs[i]!];
  }
  const deliveries = jobs.reduce((sum, job) => sum + job.length, 0);
  const firstAttempt = provider.attempts.length;
  const started = performance.now();
  let settled = 0;
  let failed = 0;
  await inLanes(jobs, concurrency, async (job) => {
    const results = await Promise.all(job.map((body) => provider.deliver(body)));
    for (const result of results) if (!result.ok) failed++;
    settled += job.length;
    onProgress?.(settled, deliveries);
  });
  const statuses: Record<number, number> = {};
  const slowest: Record<number, number> = {};
  const attempts = provider.attempts.slice(firstAttempt);
  for (const { status, ms } of attempts) {
    statuses[status] = (statuses[status] ?? 0) + 1;
    slowest[status] = Math.max(slowest[status] ?? 0, Math.round(ms));
  }
  return {
    deliveries,
    requests: attempts.length,
    failed,
    statuses,
    slowest,
    durationMs: Math.round(performance.now() - started),
  };
}

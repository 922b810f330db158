/**
 * A small measuring harness. Every comparison runs its two sides in alternating rounds in one
 * process, so that load from elsewhere on the machine (other test runs, other engineers) falls
 * on both sides alike: the ratio is the figure to trust, the absolute rate is not.
 */
import { spawn } from 'node:child_process';

/** What one side of a comparison did. */
export interface Stats {
  /** Operations per second over all counted rounds (wall-clock time). */
  opsPerSec: number;
  /**
   * Operations per second of this process's CPU time (user + system, all its threads): what
   * one core would do if nothing else ran. Only meaningful for work that never waits (no I/O).
   */
  opsPerCpuSec: number;
  /** Latency percentiles of one operation, in ms. */
  p50: number;
  p99: number;
  ops: number;
}

/** One row of the results table. */
export interface Row {
  section: string;
  name: string;
  stats: Stats;
  baseline?: { name: string; stats: Stats };
  /** The ratio the target asks for (candidate / baseline throughput), or an absolute rate. */
  target?: { ratio: number } | { opsPerSec: number };
  note?: string;
  /**
   * The work never waits (no I/O): show operations per CPU-second too, and judge an absolute
   * target by it, since other processes on a shared machine take wall-clock time from it.
   */
  perCpu?: boolean;
}

/** Latencies kept per side: enough for a stable p99 without growing without bound. */
const MAX_SAMPLES = 1 << 20;

class Recorder {
  readonly samples = new Float64Array(MAX_SAMPLES);
  count = 0;
  ops = 0;
  ms = 0;
  cpuMs = 0;

  add(latencyMs: number): void {
    if (this.count < MAX_SAMPLES) this.samples[this.count++] = latencyMs;
    this.ops++;
  }

  stats(): Stats {
    const sorted = this.samples.subarray(0, this.count).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return {
      opsPerSec: this.ops / (this.ms / 1000),
      opsPerCpuSec: this.ops / (this.cpuMs / 1000),
      p50: this.count ? at(0.5) : Number.NaN,
      p99: this.count ? at(0.99) : Number.NaN,
      ops: this.ops,
    };
  }
}

/** `concurrency` loops calling `op` back to back for `ms`, each call timed. */
async function closedLoop(
  op: () => Promise<unknown>,
  concurrency: number,
  ms: number,
  into: Recorder,
): Promise<void> {
  const start = performance.now();
  const end = start + ms;
  const worker = async () => {
    for (let t = performance.now(); t < end; ) {
      await op();
      const now = performance.now();
      into.add(now - t);
      t = now;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  into.ms += performance.now() - start;
}

/**
 * A synchronous `op` called in batches of at least ~50 µs each; a batch's time divided by its
 * size is one latency sample (per-call latency is below the clock's useful resolution).
 */
function syncLoop(op: () => unknown, ms: number, into: Recorder): void {
  let batch = 1;
  const start = performance.now();
  const end = start + ms;
  for (let t = start; t < end; ) {
    for (let i = 0; i < batch; i++) op();
    const now = performance.now();
    if (into.count < MAX_SAMPLES) into.samples[into.count++] = (now - t) / batch;
    into.ops += batch;
    if (now - t < 0.05 && batch < 1 << 16) batch *= 2;
    t = now;
  }
  into.ms += performance.now() - start;
}

export interface Plan {
  /** Counted rounds per side. */
  rounds: number;
  /** Length of one round, ms. */
  roundMs: number;
  /** Uncounted warm-up per side before the first round, ms. */
  warmupMs: number;
}

export type Side =
  | { kind: 'async'; op: () => Promise<unknown>; concurrency: number }
  | { kind: 'sync'; op: () => unknown };

async function runRound(side: Side, ms: number, into: Recorder): Promise<void> {
  const cpu = process.cpuUsage();
  if (side.kind === 'async') await closedLoop(side.op, side.concurrency, ms, into);
  else syncLoop(side.op, ms, into);
  const used = process.cpuUsage(cpu);
  into.cpuMs += (used.user + used.system) / 1000;
}

/**
 * Measure the sides in alternating rounds (ABBA order, so that neither side always goes first
 * after the other warmed the caches or left garbage behind).
 */
export async function alternate(sides: Side[], plan: Plan): Promise<Stats[]> {
  const recorders = sides.map(() => new Recorder());
  for (const side of sides) await runRound(side, plan.warmupMs, new Recorder());
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => i).reverse();
    for (const i of order) await runRound(sides[i]!, plan.roundMs, recorders[i]!);
  }
  return recorders.map((r) => r.stats());
}

export const asyncSide = (op: () => Promise<unknown>, concurrency: number): Side => ({
  kind: 'async',
  op,
  concurrency,
});
export const syncSide = (op: () => unknown): Side => ({ kind: 'sync', op });

/** A second process burning one core, for measuring on a busy machine. */
export interface Burner {
  /** The burning process's id. */
  readonly pid: number;
  /** Kill it (by its pid); safe to call twice. */
  stop(): void;
}

/**
 * Start `node -e 'for(;;){}'`: one core busy until {@link Burner.stop}, or until this process
 * exits (it is killed then too).
 */
export async function startBurner(): Promise<Burner> {
  const child = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
  const pid = child.pid;
  if (pid === undefined) throw new Error('bench: could not start the burning process');
  let alive = true;
  const stop = () => {
    if (!alive) return;
    alive = false;
    process.off('exit', stop);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  process.on('exit', stop);
  // Let it reach its loop before anything is measured.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { pid, stop };
}

/**
 * What the storm tests share: the events they send, and the checks of exactly once.
 */
import { expect } from 'vitest';
import type { Tally } from './ledger.js';
import type { Attempt, Provider, StormResult } from './provider.js';
import type { GrantEvent } from './receiver.js';
import { inLanes } from './util.js';
import type { Worker } from './workers.js';

/** `count` grant-portal events, one second apart, each about its own grant. */
export const events = (prefix: string, count: number): GrantEvent[] =>
  Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    grant_id: `grant-${prefix}-${i}`,
    occurred_at: new Date(Date.UTC(2024, 4, 1) + i * 1000).toISOString(),
  }));

/** The gate's keys of `list`. */
export const keysOf = (list: readonly GrantEvent[]) => list.map((event) => `evt:${event.id}`);

/** The distinct answer statuses of some attempts. */
export const statusesOf = (attempts: readonly { status: number }[]) => [
  ...new Set(attempts.map((a) => a.status)),
];

/** Copies of each event a storm sends: 3 to 6. */
export const copies = (r: () => number) => 3 + Math.floor(r() * 4);

/** Exactly once, nothing lost, nothing foreign, every delivery acknowledged in the end. */
export function expectExactlyOnce(tally: Tally, result?: StormResult): void {
  expect(tally.doubled).toEqual({});
  expect(tally.missing).toEqual([]);
  expect(tally.unexpected).toEqual([]);
  expect(tally.duplicates).toBe(0);
  expect(tally.lost).toBe(0);
  if (result !== undefined) expect(result.failed).toBe(0);
}

/**
 * Send every event of `list` once more, `lanes` at a time: as a provider's retry queue would,
 * not all at once (a thousand simultaneous requests on a loaded machine time out for reasons
 * that are not the gate's).
 */
export async function redeliverEach(
  provider: Provider,
  list: readonly GrantEvent[],
  lanes = 16,
): Promise<Attempt[]> {
  const late: Attempt[] = [];
  await inLanes(list, lanes, async (event) => {
    late.push(await provider.send(provider.body(event)));
  });
  return late;
}

/**
 * Every late redelivery was acknowledged at once as a duplicate (the ledger's tally shows
 * whether one ran its handler again). Fails with the odd answers themselves, latency included.
 */
export function expectAcknowledged(late: readonly Attempt[], count: number): void {
  expect(late.filter((a) => a.status !== 200)).toEqual([]);
  expect(late).toHaveLength(count);
}

/** No worker saw an unhandled rejection, and every live one still answers. */
export async function expectHealthyWorkers(list: readonly Worker[]): Promise<void> {
  for (const worker of list.filter((w) => w.alive)) {
    const stats = await worker.stats();
    expect(stats.unhandledRejections, worker.stderr).toBe(0);
  }
}

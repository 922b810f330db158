/**
 * What the webhook handler did, per event key, for the test to read through GET /api/runs:
 * `attempts` counts every call, `runs` the calls that completed.
 */
export interface Runs {
  attempts: Record<string, number>;
  runs: Record<string, number>;
}

export const record: Runs = { attempts: {}, runs: {} };

/** Count one more call of `key` in `counts`; returns the new count. */
export function count(counts: Record<string, number>, key: string): number {
  const n = (counts[key] ?? 0) + 1;
  counts[key] = n;
  return n;
}

import { appendFileSync } from 'node:fs';

/**
 * Print a scenario's figures (and append them, as one JSON line, to the file named by
 * `HOOKGATE_RELIABILITY_REPORT`): docs/reliability.md quotes them.
 */
export function report(scenario: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ scenario, ...figures });
  console.log(`[reliability] ${line}`);
  const file = process.env['HOOKGATE_RELIABILITY_REPORT'];
  if (file) appendFileSync(file, line + '\n');
}

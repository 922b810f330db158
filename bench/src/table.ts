import type { Row } from './measure.js';

function rate(opsPerSec: number): string {
  if (opsPerSec >= 1e6) return `${(opsPerSec / 1e6).toFixed(2)} M`;
  if (opsPerSec >= 1e4) return `${Math.round(opsPerSec / 1e3)} k`;
  if (opsPerSec >= 1e3) return `${(opsPerSec / 1e3).toFixed(1)} k`;
  return opsPerSec.toFixed(0);
}

function ms(value: number): string {
  if (Number.isNaN(value)) return '';
  if (value >= 10) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1);
  if (value >= 0.01) return value.toFixed(3);
  return value.toPrecision(2);
}

/** The rate a row is judged by: CPU-normalised for work that never waits, else wall clock. */
const rateOf = (row: Row) => (row.perCpu ? row.stats.opsPerCpuSec : row.stats.opsPerSec);

/** Whether the row meets its target, or `undefined` without one. */
export function meets(row: Row): boolean | undefined {
  const target = row.target;
  if (target === undefined) return undefined;
  if ('opsPerSec' in target) return rateOf(row) >= target.opsPerSec;
  if (row.baseline === undefined) return undefined;
  return row.stats.opsPerSec / row.baseline.stats.opsPerSec >= target.ratio;
}

/** The results as one Markdown table. */
export function formatTable(rows: readonly Row[]): string {
  const lines = [
    '| section | benchmark | ops/s | ops/CPU-s | p50 ms | p99 ms | baseline | baseline ops/s | ratio | target |',
    '|---|---|--:|--:|--:|--:|---|--:|--:|---|',
  ];
  for (const row of rows) {
    const { stats, baseline, target } = row;
    const ratio = baseline ? (stats.opsPerSec / baseline.stats.opsPerSec).toFixed(2) + 'x' : '';
    const met = meets(row);
    const goal =
      target === undefined
        ? ''
        : ('ratio' in target ? `≥ ${target.ratio}x` : `≥ ${rate(target.opsPerSec)}/s`) +
          (met ? ' met' : ' **missed**');
    lines.push(
      `| ${row.section} | ${row.name}${row.note ? ` (${row.note})` : ''} | ${rate(stats.opsPerSec)} | ` +
        `${row.perCpu ? rate(stats.opsPerCpuSec) : ''} | ` +
        `${ms(stats.p50)} | ${ms(stats.p99)} | ${baseline?.name ?? ''} | ` +
        `${baseline ? rate(baseline.stats.opsPerSec) : ''} | ${ratio} | ${goal} |`,
    );
  }
  return lines.join('\n');
}

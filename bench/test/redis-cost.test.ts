/**
 * `pnpm bench:redis-cost` runs to the end on its own private Redis and prints one row per
 * design, with Redis's and the client's CPU per delivery. The figures themselves are
 * measurements and not checked here; the rows' names, their owner-check column, and that each
 * median lies within its rounds' range and "vs claim" is the difference of the medians, are.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../redis-cost.ts', import.meta.url));
// The workspace packages from their sources, as every test takes them: `pnpm test` on a fresh
// clone has built nothing (`pnpm bench:redis-cost` builds first and measures the build).
const node = ['--conditions=@hookgate/source', '--import', 'tsx', script];

/** A median and the rounds' range: `1.23 (1.01-1.50)`. */
const figure = String.raw`(\d+\.\d\d) \((\d+\.\d\d)-(\d+\.\d\d)\)`;
const row = new RegExp(
  String.raw`^ {2}(claim|\+ .+?) +(yes|no|n/a) +${figure} +([+-]\d+\.\d\d)? +${figure}$`,
  'gm',
);

it('prints Redis and client CPU per delivery for each design', async () => {
  const { stdout } = await run(process.execPath, [...node, '1000'], {
    timeout: 60_000,
  });
  const rows = [...stdout.matchAll(row)].map(([, name, owner, ...numbers]) => {
    const [redis, redisMin, redisMax, vsClaim, client, clientMin, clientMax] = numbers.map(Number);
    return { name, owner, redis, redisMin, redisMax, vsClaim, client, clientMin, clientMax };
  });
  expect(rows.map(({ name, owner }) => `${name}: ${owner}`)).toEqual([
    'claim: n/a',
    '+ SET PX: no',
    '+ SET XX KEEPTTL: no',
    '+ SET XX GET PX: no',
    '+ done script: yes',
    '+ minimal script: yes',
    '+ minimal function: yes',
    '+ empty script: n/a',
    '+ empty function: n/a',
    '+ WATCH/MULTI/EXEC: yes',
  ]);
  const claim = rows[0]!.redis!;
  rows.forEach((row, i) => {
    expect(row.redis).toBeGreaterThan(0);
    expect(row.client).toBeGreaterThan(0);
    expect(row.redisMin).toBeLessThanOrEqual(row.redis!);
    expect(row.redis).toBeLessThanOrEqual(row.redisMax!);
    expect(row.clientMin).toBeLessThanOrEqual(row.client!);
    expect(row.client).toBeLessThanOrEqual(row.clientMax!);
    if (i === 0) expect(row.vsClaim).toBeNaN();
    else expect(row.vsClaim).toBeCloseTo(row.redis! - claim, 1);
  });
}, 90_000);

it('refuses a count it cannot use', async () => {
  const failed = await run(process.execPath, [...node, '10']).catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect(failed).toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
});

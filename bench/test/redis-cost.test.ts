/**
 * `pnpm bench:redis-cost` runs to the end on its own private Redis and prints one figure per
 * command mix (the figures themselves are measurements, not checked here).
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

it('prints Redis CPU per delivery for each mix', async () => {
  const { stdout } = await run(process.execPath, [...node, '1000'], {
    timeout: 60_000,
  });
  const rows = [...stdout.matchAll(/^ {2}(.+?) +(\d+\.\d\d) µs/gm)].map(([, name, us]) => ({
    name,
    us: Number(us),
  }));
  expect(rows.map((row) => row.name)).toEqual([
    'claim',
    'claim + SET',
    'claim + done script',
    'claim + empty script',
  ]);
  for (const row of rows) expect(row.us).toBeGreaterThan(0);
}, 90_000);

it('refuses a count it cannot use', async () => {
  const failed = await run(process.execPath, [...node, '10']).catch(
    (error: { code: number; stderr: string }) => error,
  );
  expect(failed).toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
});

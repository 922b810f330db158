import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const tsc = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url));

// test/types/register.ts, type-checked as a project with only Fastify 4 (or 5) installed sees
// it: `fastify` resolves to that major, and `request.webhook` is merged into its types.
describe.concurrent('types', () => {
  for (const major of [4, 5]) {
    it(`the plugin's types fit Fastify ${major}: register(), options, request.webhook`, async () => {
      const config = fileURLToPath(new URL(`./types/tsconfig.v${major}.json`, import.meta.url));
      const run = promisify(execFile)(process.execPath, [tsc, '-p', config]);
      await expect(
        run.then(
          () => 'ok',
          (error) => String(error.stdout),
        ),
      ).resolves.toBe('ok');
    });
  }
});

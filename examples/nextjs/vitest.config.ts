import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Not part of `pnpm test`: `next build` and `next start` take about a minute on a 2-core
// machine. Run it with `pnpm --filter @hookgate/example-nextjs test` (or, from the repository
// root, `npx vitest run --config examples/nextjs/vitest.config.ts`).
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('.', import.meta.url)),
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    // The build: the three @hookgate packages, then `next build`.
    hookTimeout: 300_000,
  },
});

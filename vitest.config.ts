import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// One project per workspace package; `@hookgate/*` resolves to TypeScript sources
// through the `@hookgate/source` export condition, so tests need no build step.
// @hookgate/nestjs needs legacy decorators: its own config (listed below) compiles them.
const packages = readdirSync(new URL('./packages', import.meta.url)).filter(
  (name) => name !== 'nestjs',
);
/** Projects at the repository's top level rather than under packages/. */
const TOP_LEVEL = ['examples', 'bench', 'scripts'];

export default defineConfig({
  resolve: { conditions: ['@hookgate/source'] },
  ssr: { resolve: { conditions: ['@hookgate/source'], externalConditions: ['@hookgate/source'] } },
  test: {
    // bench/ holds the round-trip test and a run of `pnpm bench:redis-cost`; the benchmarks
    // themselves run with `pnpm bench`.
    // scripts/ holds the tests of the repository's scripts (the prepack guard).
    projects: [
      ...[...packages, ...TOP_LEVEL].map((name) => ({
        extends: true as const,
        test: {
          name,
          root: TOP_LEVEL.includes(name) ? `./${name}` : `./packages/${name}`,
          include: ['test/**/*.test.ts'],
        },
      })),
      // NestJS needs legacy decorators: the package and the example have their own configs.
      'packages/nestjs/vitest.config.ts',
      'examples/nestjs/vitest.config.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    typecheck: { enabled: false },
    // .ci/run reads a JSON report to print its closing "N passed, N failed" line.
    ...(process.env.HOOKGATE_TEST_REPORT
      ? { reporters: ['default', 'json'], outputFile: { json: process.env.HOOKGATE_TEST_REPORT } }
      : {}),
  },
});

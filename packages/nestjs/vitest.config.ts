import { defineConfig } from 'vitest/config';

// The tests declare Nest controllers with TypeScript's legacy decorators (the package's sources
// use none); Vite's Oxc transform compiles them, with decorator metadata. A project of its own,
// like examples/nestjs, so the root config lists this file instead of the plain package project.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@hookgate/source'] },
  ssr: { resolve: { conditions: ['@hookgate/source'], externalConditions: ['@hookgate/source'] } },
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    name: 'nestjs',
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

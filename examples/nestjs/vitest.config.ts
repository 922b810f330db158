import { defineConfig } from 'vitest/config';

// NestJS's decorators are TypeScript's legacy ones (experimentalDecorators, in tsconfig.json);
// Vite's Oxc transform compiles them, with decorator metadata, for the tests.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@hookgate/source'] },
  ssr: { resolve: { conditions: ['@hookgate/source'], externalConditions: ['@hookgate/source'] } },
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    name: 'example-nestjs',
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

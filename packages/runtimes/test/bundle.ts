import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

/** The app of each binding: `@hookgate/hono` in a Hono app, `@hookgate/fetch` on its own. */
export const APPS = {
  hono: fileURLToPath(new URL('../src/app.ts', import.meta.url)),
  fetch: fileURLToPath(new URL('../src/fetch.ts', import.meta.url)),
} as const;

/** Which binding an app is built with. */
export type Binding = keyof typeof APPS;

/** The app bundled into one ES module, `app.js`, in a fresh temporary directory. */
export interface Bundle {
  dir: string;
  /** `dir/app.js`: default-exports the app (an object with `fetch`), a module worker as it is. */
  file: string;
  /** Every Node built-in the bundle would import (kept external so that it can be listed). */
  nodeImports: string[];
  /** Writes a file next to `app.js` (an entry that serves it); returns its path. */
  write(name: string, text: string): string;
  remove(): void;
}

/** Bundles a binding's app for a worker-like runtime: no Node platform, browser-ish conditions. */
export async function bundleApp(binding: Binding): Promise<Bundle> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-runtimes-'));
  const result = await build({
    entryPoints: { app: APPS[binding] },
    outdir: dir,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['@hookgate/source', 'workerd', 'worker', 'browser'],
    // A Node built-in stays an import (and shows in the metafile) instead of failing the build.
    external: ['node:*', ...builtinModules],
    metafile: true,
    logLevel: 'silent',
  });
  return {
    dir,
    file: join(dir, 'app.js'),
    nodeImports: nodeImportsOf(result.metafile),
    write(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function nodeImportsOf(metafile: Metafile): string[] {
  const builtins = new Set(builtinModules);
  const found = new Set<string>();
  const check = (path: string, external?: boolean) => {
    if (path.startsWith('node:') || builtins.has(path) || external) found.add(path);
  };
  for (const [path, input] of Object.entries(metafile.inputs)) {
    check(path);
    for (const i of input.imports) check(i.path, i.external);
  }
  for (const output of Object.values(metafile.outputs)) {
    for (const i of output.imports) check(i.path, i.external);
  }
  return [...found].sort();
}

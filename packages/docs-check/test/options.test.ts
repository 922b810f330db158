/**
 * Every option a public package exports is documented: for each exported type whose name ends
 * in `Options` (GateOptions, BindingOptions, MemoryStoreOptions, …), each of its properties must
 * appear in backticks somewhere in docs/ — as `property`, or as a dotted path ending in it
 * (`heartbeat.maxMs`). The types are read with the TypeScript compiler from each public
 * package's entry points, so an option added to the code without a line in the docs fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Workspace packages that are tools of this repository, not published APIs. */
const INTERNAL = new Set([
  'docs-check',
  'http-conformance',
  'redis-harness',
  'reliability',
  'runtimes',
]);

/**
 * `*Options` types that are not options a user sets: the shapes of a client's own command
 * arguments, which the store sends (node-redis's `SET` and `EVALSHA` options).
 */
const NOT_USER_OPTIONS = new Set(['NodeRedisSetOptions', 'NodeRedisEvalOptions']);

/** The `src/` entry point of every export of each public package (`.` and subpaths). */
function entryPoints(): string[] {
  const entries: string[] = [];
  for (const name of readdirSync(join(ROOT, 'packages'))) {
    const manifest = join(ROOT, 'packages', name, 'package.json');
    if (INTERNAL.has(name) || !existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
      private?: boolean;
      exports?: Record<string, unknown>;
    };
    if (pkg.private) continue;
    for (const target of Object.values(pkg.exports ?? {})) {
      const source = (target as Record<string, unknown>)['@hookgate/source'];
      if (typeof source === 'string') entries.push(resolve(ROOT, 'packages', name, source));
    }
  }
  return entries;
}

function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true, incremental: false, tsBuildInfoFile: undefined };
}

/**
 * `Interface.property` for every property of every exported `*Options` type. A property is
 * named after the interface that declares it, so an alias (`HookgateOptions` of a binding is
 * `BindingOptions`) or a re-export counts once.
 */
function exportedOptions(entries: string[]): { names: string[]; types: string[] } {
  const program = ts.createProgram({ rootNames: entries, options: compilerOptions() });
  const checker = program.getTypeChecker();
  const names = new Set<string>();
  const types = new Set<string>();
  for (const entry of entries) {
    const source = program.getSourceFile(entry);
    const module = source && checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`cannot read the exports of ${entry}`);
    for (const exported of checker.getExportsOfModule(module)) {
      if (!exported.name.endsWith('Options') || NOT_USER_OPTIONS.has(exported.name)) continue;
      const symbol =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (!(symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias))) continue;
      types.add(exported.name);
      const type = checker.getDeclaredTypeOfSymbol(symbol);
      for (const property of checker.getPropertiesOfType(type)) {
        const owner = property.declarations?.[0]?.parent;
        const ownerName =
          owner !== undefined && ts.isInterfaceDeclaration(owner) ? owner.name.text : symbol.name;
        names.add(`${ownerName}.${property.name}`);
      }
    }
  }
  return { names: [...names].sort(), types: [...types].sort() };
}

/** docs/**\/*.md, without the generated API reference. */
function docsText(): string {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative(ROOT, path) !== join('docs', 'api')) walk(path);
      } else if (entry.name.endsWith('.md')) texts.push(readFileSync(path, 'utf8'));
    }
  };
  walk(join(ROOT, 'docs'));
  return texts.join('\n');
}

/** Whether `property` appears in backticks: `property`, or `a.b.property`. */
function documented(text: string, property: string): boolean {
  const escaped = property.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`\`(?:[\\w$]+\\.)*${escaped}\``).test(text);
}

describe('option names in the docs', () => {
  const { names, types } = exportedOptions(entryPoints());
  const text = docsText();

  it('finds the exported options types of the public packages', () => {
    for (const expected of [
      'GateOptions',
      'HeartbeatOptions',
      'SequenceOptions',
      'BindingOptions',
      'BatchOptions',
      'VerifierOptions',
      'MemoryStoreOptions',
      'RedisStoreOptions',
      'PostgresStoreOptions',
    ]) {
      expect(types).toContain(expected);
    }
    expect(names).toContain('GateOptions.claimTtlMs');
    expect(names).toContain('HeartbeatOptions.maxMs');
  });

  it('tells a documented name from one that is not', () => {
    expect(documented('with `heartbeat.maxMs` set', 'maxMs')).toBe(true);
    expect(documented('with `claimTtlMs`', 'claimTtlMs')).toBe(true);
    expect(documented('with `xclaimTtlMs` or claimTtlMs', 'claimTtlMs')).toBe(false);
  });

  it('every property of every exported *Options type appears as `property` in docs/', () => {
    const missing = names.filter((name) => !documented(text, name.slice(name.indexOf('.') + 1)));
    expect(missing, `documented nowhere in docs/: ${missing.join(', ')}`).toEqual([]);
  });
});

// The pack test: what a user installs is what works. It packs every public package with
// `pnpm pack` (workspace ranges and publishConfig rewritten, as `pnpm publish` does), installs
// the tarballs with plain npm into a fresh consumer project, and there
//   (a) type-checks and runs an ESM app with `module: nodenext`, and type-checks it with
//       `moduleResolution: bundler`;
//   (b) require()s every package but store-conformance (a vitest suite) from a .cjs file on
//       the running Node (require(esm)), and
//       type-checks a .cts file that does the same with `module: nodenext`;
//   (c) type-checks core, memory and hono with `types: []` and no @types/node;
//   (d) bundles core + memory for `--platform=browser` with esbuild, and runs the bundle;
//   (e) checks that each package's source maps resolve to shipped sources, and runs
//       `@arethetypeswrong/cli --profile esm-only` and `publint --strict` on it.
// Usage: `pnpm build && node scripts/pack-test.mjs` (`pnpm test:pack`). Keeps its directory
// on failure (its path is printed), removes it on success.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'hookgate-pack-'));
const tarballs = join(work, 'tarballs');
const app = join(work, 'consumer');
mkdirSync(tarballs);
mkdirSync(app);

/** The versions the consumer installs next to the tarballs: peers, types and tools. */
const consumerDeps = {
  express: '5.3.0',
  koa: '3.3.0',
  hono: '4.13.19',
  ioredis: '6.0.0',
  redis: '6.3.1',
  pg: '8.23.1',
  vitest: '4.1.12',
  '@types/express': '5.0.6',
  '@types/koa': '3.0.3',
  '@types/pg': '8.23.1',
  '@types/node': '20.19.43',
  typescript: '5.9.3',
  esbuild: '0.28.2',
  '@arethetypeswrong/cli': '0.18.5',
  publint: '0.3.25',
};

// Every package and subpath, imported as a user would; one event delivered twice.
const APP = `
import { createGate, deriveKey, HookgateError } from '@hookgate/core';
import { readBody } from '@hookgate/core/node';
import { hookgate as express } from '@hookgate/express';
import { hookgate as fastify } from '@hookgate/fastify';
import { webhookHandler } from '@hookgate/fetch';
import { hookgate as hono } from '@hookgate/hono';
import { IoRedisStore } from '@hookgate/ioredis';
import { hookgate as koa } from '@hookgate/koa';
import { MemoryStore } from '@hookgate/memory';
import { NodeRedisStore } from '@hookgate/node-redis';
import { PostgresLedger, PostgresStore } from '@hookgate/pg';
import { RedisStore } from '@hookgate/redis-core';
import type { ClaimStoreSuiteOptions } from '@hookgate/store-conformance';

const exported: unknown[] = [deriveKey, HookgateError, readBody, express, hono, IoRedisStore, NodeRedisStore, PostgresLedger, PostgresStore, RedisStore];
exported.push(koa, fastify, webhookHandler);
if (exported.some((value) => typeof value !== 'function')) throw new Error('an export is missing');
const options: ClaimStoreSuiteOptions | undefined = undefined;
void options;

const gate = createGate({ store: new MemoryStore() });
const first = await gate.run({ payload: { id: 'evt_1' } }, async () => {});
const second = await gate.run({ payload: { id: 'evt_1' } }, async () => {});
console.log(first.status, second.status);
`;

const REQUIRE_CJS = `
const names = ['@hookgate/core', '@hookgate/core/node', '@hookgate/express', '@hookgate/fastify', '@hookgate/fetch', '@hookgate/hono', '@hookgate/ioredis', '@hookgate/koa', '@hookgate/memory', '@hookgate/node-redis', '@hookgate/pg', '@hookgate/redis-core'];
for (const name of names) {
  const loaded = require(name);
  if (Object.keys(loaded).length === 0) throw new Error(name + ' loaded empty');
}
const { createGate } = require('@hookgate/core');
const { MemoryStore } = require('@hookgate/memory');
const gate = createGate({ store: new MemoryStore() });
gate.run({ payload: { id: 'evt_1' } }, async () => {})
  .then((first) => gate.run({ payload: { id: 'evt_1' } }, async () => {}).then((second) => console.log(first.status, second.status)));
`;

const REQUIRE_CTS = `
import core = require('@hookgate/core');
import memory = require('@hookgate/memory');
import express = require('@hookgate/express');

const gate: core.Gate = core.createGate({ store: new memory.MemoryStore() });
void gate;
void express.hookgate;
`;

const PORTABLE = `
import { createGate } from '@hookgate/core';
import { hookgate } from '@hookgate/hono';
import { MemoryStore } from '@hookgate/memory';

void hookgate;
const gate = createGate({ store: new MemoryStore() });
const first = await gate.run({ payload: { type: 'no id, so a digest key' } }, async () => {});
const second = await gate.run({ payload: { type: 'no id, so a digest key' } }, async () => {});
console.log(first.status, second.status);
`;

const started = performance.now();
const step = (name) => console.log(`\n[pack-test] ${name}`);
const run = (command, args, options = {}) =>
  execFileSync(command, args, { stdio: 'inherit', cwd: app, ...options });
const output = (command, args, options = {}) =>
  execFileSync(command, args, { cwd: app, encoding: 'utf8', ...options });
const bin = (name) => join(app, 'node_modules', '.bin', name);
const write = (file, text) => writeFileSync(join(app, file), text);

try {
  step(`packing into ${tarballs}`);
  const packages = readdirSync(join(root, 'packages'))
    .map((dir) => ({
      dir: join(root, 'packages', dir),
      pkg: readJson(join(root, 'packages', dir, 'package.json')),
    }))
    .filter(({ pkg }) => !pkg.private);
  const files = {};
  for (const { dir, pkg } of packages) {
    output('pnpm', ['pack', '--pack-destination', tarballs], { cwd: dir, stdio: 'pipe' });
    files[pkg.name] = join(tarballs, `${pkg.name.slice(1).replace('/', '-')}-${pkg.version}.tgz`);
  }
  console.log(Object.keys(files).join(', '));

  step('installing the tarballs with npm');
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify(
      {
        name: 'consumer',
        private: true,
        type: 'module',
        dependencies: {
          ...Object.fromEntries(
            Object.entries(files).map(([name, file]) => [name, `file:${file}`]),
          ),
          ...consumerDeps,
        },
      },
      null,
      2,
    ),
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error']);

  step('(a) an ESM app: nodenext (type-checked and run) and bundler (type-checked)');
  write('app.ts', APP);
  write('tsconfig.nodenext.json', tsconfig({ module: 'nodenext', outDir: 'out' }, ['app.ts']));
  write(
    'tsconfig.bundler.json',
    tsconfig({ module: 'esnext', moduleResolution: 'bundler', noEmit: true }, ['app.ts']),
  );
  run(bin('tsc'), ['-p', 'tsconfig.nodenext.json']);
  run(bin('tsc'), ['-p', 'tsconfig.bundler.json']);
  expectOutput(output('node', ['out/app.js']), 'processed duplicate');
  // Our declarations checked too (skipLibCheck off), but without @hookgate/koa: @types/koa
  // 3.0.3 does not compile against content-disposition 2, which express 5 hoists here.
  write(
    'declarations.ts',
    APP.split('\n')
      .filter((line) => !/koa/.test(line))
      .join('\n'),
  );
  write(
    'tsconfig.declarations.json',
    tsconfig({ module: 'nodenext', noEmit: true, skipLibCheck: false, types: ['node'] }, [
      'declarations.ts',
    ]),
  );
  run(bin('tsc'), ['-p', 'tsconfig.declarations.json']);

  step(`(b) require() from CommonJS on Node ${process.version}`);
  write('require.cjs', REQUIRE_CJS);
  expectOutput(output('node', ['require.cjs'], { stdio: 'pipe' }), 'processed duplicate');
  write('require.cts', REQUIRE_CTS);
  write('tsconfig.cts.json', tsconfig({ module: 'nodenext', noEmit: true }, ['require.cts']));
  run(bin('tsc'), ['-p', 'tsconfig.cts.json']);

  step('(c) core, memory and hono type-check with types: [] and no @types/node');
  write('portable.ts', PORTABLE);
  write(
    'tsconfig.portable.json',
    tsconfig(
      {
        module: 'esnext',
        moduleResolution: 'bundler',
        noEmit: true,
        skipLibCheck: false,
        types: [],
        lib: ['ES2022', 'DOM'],
      },
      ['portable.ts'],
    ),
  );
  run(bin('tsc'), ['-p', 'tsconfig.portable.json']);

  step('(d) core + memory bundled for the browser with esbuild');
  const meta = join(app, 'meta.json');
  run(bin('esbuild'), [
    'portable.ts',
    '--bundle',
    '--platform=browser',
    '--format=esm',
    '--outfile=out/portable.js',
    `--metafile=${meta}`,
    '--log-level=warning',
  ]);
  const inputs = Object.keys(readJson(meta).inputs);
  const nodeModules = inputs.filter((input) => input.startsWith('node:'));
  if (nodeModules.length > 0)
    throw new Error(`the browser bundle imports ${nodeModules.join(', ')}`);
  expectOutput(output('node', ['out/portable.js']), 'processed duplicate');

  step('(e) @arethetypeswrong/cli --profile esm-only and publint, per package');
  for (const [name, file] of Object.entries(files)) {
    checkSourceMaps(join(app, 'node_modules', name));
    quiet(bin('attw'), [file, '--profile', 'esm-only', '--format', 'table-flipped']);
    quiet(bin('publint'), ['run', join(app, 'node_modules', name), '--strict']);
    console.log(`${name}: source maps resolve; attw and publint clean`);
  }

  console.log(
    `\n[pack-test] passed on Node ${process.version} in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  rmSync(work, { recursive: true, force: true });
} catch (error) {
  console.error(`\n[pack-test] FAILED on Node ${process.version}: ${error.message}\nkept: ${work}`);
  process.exit(1);
}

/** Every source map in an installed package names sources the package ships. */
function checkSourceMaps(dir) {
  const maps = readdirSync(dir, { recursive: true }).filter((file) => file.endsWith('.map'));
  if (maps.length === 0) throw new Error(`${dir} ships no source maps`);
  for (const map of maps) {
    for (const source of readJson(join(dir, map)).sources) {
      if (!existsSync(join(dir, dirname(map), source))) {
        throw new Error(`${dir}/${map} points at ${source}, which is not shipped`);
      }
    }
  }
}

/** Run a command, printing its output only when it fails. */
function quiet(command, args) {
  try {
    output(command, args, { stdio: 'pipe' });
  } catch (error) {
    console.error(`${error.stdout ?? ''}${error.stderr ?? ''}`);
    throw error;
  }
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function tsconfig(options, files) {
  return JSON.stringify({
    compilerOptions: { target: 'ES2022', strict: true, skipLibCheck: true, ...options },
    files,
  });
}

function expectOutput(text, expected) {
  if (!text.includes(expected))
    throw new Error(`expected output to contain "${expected}", got:\n${text}`);
  console.log(text.trim());
}

// The pack test: what a user installs is what works. It packs every public package with
// `pnpm pack` (workspace ranges and publishConfig rewritten, as `pnpm publish` does), installs
// the tarballs with plain npm into a fresh consumer project, and there
//   (a) type-checks and runs an ESM app that imports every package but the cli with
//       `module: nodenext`, type-checks it with `moduleResolution: bundler`, and type-checks
//       every package's declarations with `skipLibCheck` off;
//   (b) require()s every package but the cli from a .cjs file on the running Node
//       (require(esm)), runs the cli's `hookgate` binary (`--version`, `--help`), and
//       type-checks a .cts file that requires core, memory and express with `module: nodenext`,
//       and sees the settings docs/install.md says fail (node10, node16) fail with its codes;
//   (c) type-checks core, memory, hono and fetch with `types: []` and no @types/node;
//   (d) bundles core, memory and fetch for `--platform=browser` with esbuild, and runs the
//       bundle (a gate, then a fetch handler answering a Request);
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

/**
 * The versions the consumer installs next to the tarballs: every peer the packages name (and
 * @nestjs/common's reflect-metadata), at the versions the workspace tests with (the packages'
 * devDependencies), then types and tools.
 */
const consumerDeps = {
  express: '5.3.0',
  fastify: '5.12.8',
  koa: '3.3.0',
  hono: '4.13.19',
  '@nestjs/common': '12.5.1',
  rxjs: '7.8.2',
  'reflect-metadata': '0.2.2',
  '@opentelemetry/api': '1.9.1',
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

/** The one package that is a program: its binary is run instead of imported. */
const CLI = '@hookgate/cli';

// Every package but the cli, and core's subpath, imported as a user would; one event
// delivered twice, through a gate the otel package instruments (no SDK registered).
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
import { Webhook, WebhookInterceptor } from '@hookgate/nestjs';
import { NodeRedisStore } from '@hookgate/node-redis';
import { instrument, instrumentGate } from '@hookgate/otel';
import { PostgresLedger, PostgresStore } from '@hookgate/pg';
import { RedisStore } from '@hookgate/redis-core';
import { type ClaimStoreSuiteOptions, claimStoreSuite } from '@hookgate/store-conformance';

const exported: unknown[] = [deriveKey, HookgateError, readBody, express, hono, IoRedisStore, NodeRedisStore, PostgresLedger, PostgresStore, RedisStore];
exported.push(koa, fastify, webhookHandler, Webhook, WebhookInterceptor, claimStoreSuite);
if (exported.some((value) => typeof value !== 'function')) throw new Error('an export is missing');
const options: ClaimStoreSuiteOptions | undefined = undefined;
void options;

const gate = instrumentGate(createGate(instrument({ store: new MemoryStore() })));
const first = await gate.run({ payload: { id: 'evt_1' } }, async () => {});
const second = await gate.run({ payload: { id: 'evt_1' } }, async () => {});
console.log(first.status, second.status);
`;

/** A .cjs file that require()s every module in `names`, a constant written before it. */
const REQUIRE_CJS = `
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
import { webhookHandler } from '@hookgate/fetch';
import { hookgate } from '@hookgate/hono';
import { MemoryStore } from '@hookgate/memory';

void hookgate;
const gate = createGate({ store: new MemoryStore() });
const first = await gate.run({ payload: { type: 'no id, so a digest key' } }, async () => {});
const second = await gate.run({ payload: { type: 'no id, so a digest key' } }, async () => {});
const handle = webhookHandler({ gate, verify: false }, async () => new Response('ok'));
const post = () =>
  handle(new Request('http://localhost/webhooks', { method: 'POST', body: '{"type":"x"}' }));
const answers = [(await post()).status, (await post()).status];
console.log(first.status, second.status, answers.join(' '));
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
  // Every packed package is in the ESM app, so that a new package cannot be left out unseen.
  const missing = Object.keys(files).filter(
    (name) => name !== CLI && !APP.includes(`from '${name}';`),
  );
  if (missing.length > 0) throw new Error(`the ESM app imports no ${missing.join(', ')}`);
  if (!(CLI in files)) throw new Error(`${CLI} was not packed`);

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
  // Our declarations checked too (skipLibCheck off), every package's. @types/koa 3.0.3 imports
  // 'content-disposition' for the API of @types/content-disposition 0.5 (its dependency), but
  // npm hoists Express 5's content-disposition 2 here, whose own types TypeScript prefers and
  // which have no `Options` (TS2694 in @types/koa). Koa 3's own content-disposition 1 is nested,
  // so a Koa app without Express 5 never meets this. Mapping the name to the types @types/koa
  // was written against changes nothing in how our declarations are checked.
  write('declarations.ts', APP);
  write(
    'tsconfig.declarations.json',
    tsconfig(
      {
        module: 'nodenext',
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        paths: { 'content-disposition': ['./node_modules/@types/content-disposition'] },
      },
      ['declarations.ts'],
    ),
  );
  run(bin('tsc'), ['-p', 'tsconfig.declarations.json']);

  step(`(b) require() from CommonJS on Node ${process.version}, and the cli's binary`);
  const required = [
    ...Object.keys(files).filter((name) => name !== CLI),
    '@hookgate/core/node',
  ].sort();
  write('require.cjs', `const names = ${JSON.stringify(required)};\n${REQUIRE_CJS}`);
  expectOutput(output('node', ['require.cjs'], { stdio: 'pipe' }), 'processed duplicate');
  console.log(`required: ${required.join(', ')}`);
  const cli = readJson(join(app, 'node_modules', CLI, 'package.json'));
  expectOutput(output(bin('hookgate'), ['--version'], { stdio: 'pipe' }), cli.version);
  expectOutput(output(bin('hookgate'), ['--help'], { stdio: 'pipe' }), 'hookgate inspect');
  write('require.cts', REQUIRE_CTS);
  write('tsconfig.cts.json', tsconfig({ module: 'nodenext', noEmit: true }, ['require.cts']));
  run(bin('tsc'), ['-p', 'tsconfig.cts.json']);
  // The CommonJS settings docs/install.md says fail, failing as it says.
  write('import.cts', "import { createGate } from '@hookgate/core';\nvoid createGate;\n");
  write('require-only.cts', "import core = require('@hookgate/core');\nvoid core;\n");
  const legacy = { module: 'commonjs', moduleResolution: 'node10', noEmit: true };
  expectTscError('node10', legacy, 'import.cts', 'TS2307');
  expectTscError('node16', { module: 'node16', noEmit: true }, 'import.cts', 'TS1479');
  expectTscError('node16', { module: 'node16', noEmit: true }, 'require-only.cts', 'TS1471');

  step('(c) core, memory, hono and fetch type-check with types: [] and no @types/node');
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

  step('(d) core, memory and fetch bundled for the browser with esbuild');
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
  expectOutput(output('node', ['out/portable.js']), 'processed duplicate 200 200');

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

/** Type-check `file` under `options` and expect it to fail with `code` (`TS2307`). */
function expectTscError(label, options, file, code) {
  const config = `tsconfig.fails-${label}-${file}.json`;
  write(config, tsconfig(options, [file]));
  let printed = '';
  try {
    output(bin('tsc'), ['-p', config], { stdio: 'pipe' });
  } catch (error) {
    printed = `${error.stdout ?? ''}${error.stderr ?? ''}`;
  }
  if (!printed.includes(`error ${code}`)) {
    throw new Error(`expected ${file} under ${label} to fail with ${code}, got:\n${printed}`);
  }
  console.log(`${file} under ${label}: ${code}, as docs/install.md says`);
}

function expectOutput(text, expected) {
  if (!text.includes(expected))
    throw new Error(`expected output to contain "${expected}", got:\n${text}`);
  console.log(text.trim());
}

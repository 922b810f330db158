/**
 * `pnpm bench:instructions [fastify fetch express koa hono]`: each binding against the same
 * route by hand around `gate.run`, counted in CPU instructions instead of seconds. The
 * in-process and HTTP rows of `pnpm bench` move by more than the differences they measure (the
 * same Fastify code has measured 0.76x to 1.21x), because seconds of CPU on a shared machine
 * depend on what else runs. Instructions do not: valgrind's cachegrind counts every instruction
 * the process executes, the same for the same binary and inputs whatever the machine does.
 *
 * Each side runs in a process of its own under `valgrind --tool=cachegrind`, with V8 made
 * deterministic (`--single-threaded --predictable`, fixed seeds, no old-generation collection),
 * twice: for `SHORT` and for `LONG` requests, 8 in flight, over a gate whose store answers at
 * once and keeps nothing. Fastify is called through `app.inject()` (the apps of `pnpm bench`'s
 * row, `bench/src/fastify.ts`), fetch as `pnpm bench`'s row does (`bench/src/fetch.ts`), Express
 * and Koa through `light-my-request`, Hono through `app.request()` (`bench/src/in-process.ts`):
 * the framework's whole request pipeline, without a socket. The difference of the two counts,
 * over the difference of the requests, is the cost of one request in a warm process: start-up,
 * module loading and the JIT's first compilations fall out. Two runs of the same code agree
 * within 0.2%. What a young-generation collection finds alive depends on the point it falls at,
 * so a change that moves those points moves the count by a few thousand instructions a request
 * (1 to 2%); the window of 10,000 requests spreads them over about 16 collections. Needs
 * valgrind (Debian's `valgrind`); about a minute a row on two cores, whatever their load.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { answered, type ClaimStore, createGate, type Gate } from '@hookgate/core';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import { type Call, newEvent } from './src/in-process.js';

/**
 * Each row's two sides: the binding, then the route by hand. Each row imports what it needs
 * when it is made, so that a process measuring one row loads no other framework: what else is
 * loaded moves where the collections fall, and so the count (by 5% for Hono, when all were).
 */
const ROWS: Record<string, () => Promise<[Call, Call]>> = {
  fastify: async () => {
    const { byHand, withPlugin } = await import('./src/fastify.js');
    return [
      injectInto(await withPlugin(gateAnsweringAtOnce())),
      injectInto(await byHand(gateAnsweringAtOnce())),
    ];
  },
  fetch: async () => {
    const [{ webhookHandler }, { byHand, work }] = await Promise.all([
      import('@hookgate/fetch'),
      import('./src/fetch.js'),
    ]);
    const binding = webhookHandler({ gate: gateAnsweringAtOnce(), verify: false }, work);
    return [fetchCall(binding), fetchCall(byHand(gateAnsweringAtOnce()))];
  },
  express: async () => (await import('./src/in-process.js')).expressSides(gateAnsweringAtOnce),
  koa: async () => (await import('./src/in-process.js')).koaSides(gateAnsweringAtOnce),
  hono: async () => (await import('./src/in-process.js')).honoSides(gateAnsweringAtOnce),
};
const SIDES = ['the binding', 'by hand'] as const;
const SHORT = 3_000;
const LONG = 13_000;
const IN_FLIGHT = 8;
/** The child's script, bundled where its packages resolve, with a chunk for each row. */
const BUNDLE = fileURLToPath(new URL('node_modules/.cache/instructions', import.meta.url));
const CHILD = `${BUNDLE}/instructions.mjs`;

const injectInto =
  (app: FastifyInstance): Call =>
  async (body) =>
    (
      await app.inject({
        method: 'POST',
        url: '/webhooks',
        payload: body,
        headers: { 'content-type': 'application/json' },
      })
    ).statusCode;

const fetchCall =
  (handler: (request: Request) => Promise<Response>): Call =>
  async (body) => {
    const request = new Request('http://127.0.0.1/webhooks', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    const response = await handler(request);
    await response.arrayBuffer();
    return response.status;
  };

if (process.argv[2] === '--child') {
  await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
} else await parent(process.argv.slice(2));

/** Post `requests` new deliveries to one side of a row, `IN_FLIGHT` at a time. */
async function child(row: string, side: number, requests: number): Promise<void> {
  const call = (await ROWS[row]!())[side]!;
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      next++;
      const status = await call(newEvent());
      if (status !== 200) throw new Error(`${row}: answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

async function parent(asked: string[]): Promise<void> {
  const rows = asked.length > 0 ? asked : Object.keys(ROWS);
  const unknown = rows.filter((row) => !(row in ROWS));
  if (unknown.length > 0) {
    console.error(`unknown rows: ${unknown.join(', ')} (rows: ${Object.keys(ROWS).join(', ')})`);
    process.exit(2);
  }
  // The child runs as one plain JavaScript file: no tsx loader, no thread of its own.
  await build({
    entryPoints: [fileURLToPath(import.meta.url)],
    outdir: BUNDLE,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external', // the built packages, from bench/node_modules, as `pnpm bench` uses
    logLevel: 'warning',
  });
  const runs = rows.flatMap((row) =>
    SIDES.flatMap((_, side) => [SHORT, LONG].map((n) => ({ row, side, n }))),
  );
  const counts = new Map<string, number>();
  // Instruction counts do not depend on the load, so the runs share the cores.
  const lanes = Math.max(1, Math.min(availableParallelism(), runs.length));
  let taken = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (taken < runs.length) {
        const { row, side, n } = runs[taken++]!;
        counts.set(`${row}/${side}/${n}`, await count(row, side, n));
      }
    }),
  );
  const perRequest = (row: string, side: number) =>
    (counts.get(`${row}/${side}/${LONG}`)! - counts.get(`${row}/${side}/${SHORT}`)!) /
    (LONG - SHORT);
  console.log(
    `instructions per request, in process, ${IN_FLIGHT} in flight (${SHORT} and ${LONG} requests):`,
  );
  console.log(`  ${'row'.padEnd(8)} ${SIDES[0].padStart(12)} ${SIDES[1].padStart(12)}   ratio`);
  for (const row of rows) {
    const [binding, hand] = [perRequest(row, 0), perRequest(row, 1)];
    const k = (n: number) => `${(n / 1000).toFixed(1)}k`.padStart(12);
    console.log(`  ${row.padEnd(8)} ${k(binding)} ${k(hand)}   ${(hand / binding).toFixed(3)}x`);
  }
  console.log('  ratio: by hand over the binding, as in pnpm bench (1.000x costs the same)');
}

/**
 * A gate over a store that claims every key and answers at once, as a `MemoryStore` does, but
 * keeps nothing: the heap stays the same size however many requests ran, so each costs the same.
 */
function gateAnsweringAtOnce(): Gate {
  const yes = () => answered(true);
  const store: ClaimStore = {
    claim: () => answered('acquired'),
    done: yes,
    release: yes,
    extend: yes,
    advance: () => answered('applied'),
    releaseHold: yes,
    extendHold: yes,
  };
  return createGate({ store, eventId: 'id' });
}

/** Instructions executed by a child process posting `requests` deliveries to a row's side. */
function count(row: string, side: number, requests: number): Promise<number> {
  const args = [
    '--tool=cachegrind',
    '--cache-sim=no',
    '--cachegrind-out-file=/dev/null',
    // V8 writes code into memory it then runs: valgrind must see each rewrite.
    '--smc-check=all-non-file',
    process.execPath,
    '--single-threaded',
    '--predictable',
    '--hash-seed=1',
    '--random-seed=1',
    // V8 starts an old-generation collection when a heuristic that reads the clock says so,
    // which moved the count by a tenth between runs of the same code: with room enough, none
    // runs, and the count leaves them out. Young-generation collections, which each request's
    // garbage makes, stay in, at the same points of every run: a semi-space that never resizes.
    '--initial-old-space-size=1024',
    '--min-semi-space-size=16',
    '--max-semi-space-size=16',
    CHILD,
    '--child',
    row,
    String(side),
    String(requests),
  ];
  return new Promise((resolve, reject) => {
    const run = spawn('valgrind', args, { stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    run.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    run.on('error', (error) =>
      reject(new Error(`valgrind did not start (apt-get install valgrind): ${error.message}`)),
    );
    run.on('close', (code) => {
      const refs = /I\s+refs:\s+([\d,]+)/.exec(stderr)?.[1];
      if (code !== 0 || refs === undefined) {
        reject(
          new Error(`valgrind exited ${code} for ${row}/${SIDES[side]} × ${requests}:\n${stderr}`),
        );
      } else resolve(Number(refs.replaceAll(',', '')));
    });
  });
}

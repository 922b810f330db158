/**
 * `pnpm bench:instructions`: the Fastify row of `pnpm bench` counted in CPU instructions instead
 * of seconds. The in-process Fastify row moves by more than the difference it measures (the same
 * code has measured 0.76x to 1.21x), because seconds of CPU on a shared machine depend on what
 * else runs. Instructions do not: valgrind's cachegrind counts every instruction the process
 * executes, the same for the same binary and inputs whatever the machine does.
 *
 * Each side runs in a process of its own under `valgrind --tool=cachegrind`, with V8 made
 * deterministic (`--single-threaded --predictable`, fixed seeds, no old-generation collection),
 * twice: for `SHORT` and for `LONG` requests through `app.inject()`, 8 in flight, the same apps
 * as `pnpm bench`'s row (`bench/src/fastify.ts`) over a gate whose store answers at once and
 * keeps nothing. The difference of the two counts, over the
 * difference of the requests, is the cost of one request in a warm process: start-up, module
 * loading and the JIT's first compilations fall out. Two runs of the same code agree within
 * 0.2%. What a young-generation collection finds alive depends on the point it falls at, so a
 * change that moves those points moves the count by a few thousand instructions a request
 * (1 to 2%); the window of 10,000 requests spreads them over about 16 collections. Needs
 * valgrind (Debian's `valgrind`); about 60 to 100 s on two cores, whatever their load.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { answered, type ClaimStore, createGate } from '@hookgate/core';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import { byHand, payload, withPlugin } from './src/fastify.js';

const SIDES: Record<string, () => Promise<FastifyInstance>> = {
  'the hookgate plugin': () => withPlugin(gateAnsweringAtOnce()),
  'the same route by hand around gate.run': () => byHand(gateAnsweringAtOnce()),
};
const SHORT = 3_000;
const LONG = 13_000;
const IN_FLIGHT = 8;
/** The child's script, bundled where its packages resolve. */
const CHILD = fileURLToPath(new URL('node_modules/.cache/instructions.mjs', import.meta.url));

if (process.argv[2] === '--child') await child(process.argv[3]!, Number(process.argv[4]));
else await parent();

/** Post `requests` new deliveries to one side, `IN_FLIGHT` at a time, and check each answer. */
async function child(side: string, requests: number): Promise<void> {
  const app = await SIDES[side]!();
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      next++;
      const response = await app.inject({
        method: 'POST',
        url: '/webhooks',
        payload: payload(),
        headers: { 'content-type': 'application/json' },
      });
      if (response.statusCode !== 200) throw new Error(`answered ${response.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await app.close();
}

async function parent(): Promise<void> {
  // The child runs as one plain JavaScript file: no tsx loader, no thread of its own.
  await build({
    entryPoints: [fileURLToPath(import.meta.url)],
    outfile: CHILD,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external', // the built packages, from bench/node_modules, as `pnpm bench` uses
    logLevel: 'warning',
  });
  const runs = Object.keys(SIDES).flatMap((side) => [SHORT, LONG].map((n) => ({ side, n })));
  const counts = new Map<string, number>();
  // Instruction counts do not depend on the load, so the runs share the cores.
  const lanes = Math.max(1, Math.min(availableParallelism(), runs.length));
  let taken = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (taken < runs.length) {
        const { side, n } = runs[taken++]!;
        counts.set(`${side}/${n}`, await count(side, n));
      }
    }),
  );
  const perRequest = (side: string) =>
    (counts.get(`${side}/${LONG}`)! - counts.get(`${side}/${SHORT}`)!) / (LONG - SHORT);
  const [plugin, hand] = Object.keys(SIDES).map(perRequest) as [number, number];
  console.log(`Fastify, app.inject(), ${IN_FLIGHT} in flight, instructions per request:`);
  for (const side of Object.keys(SIDES)) {
    console.log(`  ${side.padEnd(40)} ${(perRequest(side) / 1000).toFixed(1)}k`);
  }
  console.log(`  ratio (by hand / plugin, as pnpm bench's)  ${(hand / plugin).toFixed(3)}x`);
}

/**
 * A gate over a store that claims every key and answers at once, as a `MemoryStore` does, but
 * keeps nothing: the heap stays the same size however many requests ran, so each costs the same.
 */
function gateAnsweringAtOnce() {
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

/** Instructions executed by a child process posting `requests` deliveries to `side`. */
function count(side: string, requests: number): Promise<number> {
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
    side,
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
        reject(new Error(`valgrind exited ${code} for ${side} × ${requests}:\n${stderr}`));
      } else resolve(Number(refs.replaceAll(',', '')));
    });
  });
}

/**
 * `pnpm bench:instructions [row...]`: each binding (fastify, fetch, express, koa, hono) against
 * the same route by hand around `gate.run`, and `gate.run` over Redis (redis, redis-commands,
 * redis-empty-script, redis-minimal-script) against the least a claim and a done by hand send,
 * counted in CPU instructions instead of seconds. The in-process and HTTP rows of `pnpm bench`
 * move by more than the differences they measure (the same Fastify code has measured 0.76x to
 * 1.21x), because seconds of CPU on a shared machine depend on what else runs. Instructions do
 * not: valgrind's cachegrind counts every instruction the process executes, the same for the
 * same binary and inputs whatever the machine does.
 *
 * Each side runs in a process of its own under `valgrind --tool=cachegrind`, with V8 made
 * deterministic (`--single-threaded --predictable`, fixed seeds, no old-generation collection),
 * twice: for `SHORT` and for `LONG` requests, 8 in flight, over a gate whose store answers at
 * once and keeps nothing. Fastify is called through `app.inject()` (the apps of `pnpm bench`'s
 * row, `bench/src/fastify.ts`), fetch as `pnpm bench`'s row does (`bench/src/fetch.ts`), Express
 * and Koa through `light-my-request`, Hono through `app.request()` (`bench/src/in-process.ts`):
 * the framework's whole request pipeline, without a socket. The difference of the two counts,
 * over the difference of the requests, is the cost of one request in a warm process: start-up,
 * module loading and the JIT's first compilations fall out.
 *
 * The Redis rows post one delivery at a time to a `redis-server` of their own, which runs under
 * cachegrind too (`hz 1`, no background jemalloc thread, so that little of what it does depends
 * on how long the run takes): each side's Node and Redis instructions are counted apart. Their
 * by-hand side is `SET key p:<token> NX PX` + `SET key d:<token> PX` (`pnpm bench`'s Redis row);
 * the other side `gate.run` over `IoRedisStore`, or hookgate's claim followed by a done script
 * sent by hand: hookgate's own, `return 1`, or the least owner-checked script.
 *
 * Two runs of the same code agree within 0.2%. What a young-generation collection finds alive
 * depends on the point it falls at, so a change that moves those points moves the count by a few
 * thousand instructions a request (1 to 2%); the window of 10,000 requests spreads them over
 * about 16 collections. Needs valgrind (Debian's `valgrind`); about a minute a row on two cores,
 * whatever their load (the nine rows: about 9 minutes).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answered, type ClaimStore, createGate, type Gate } from '@hookgate/core';
import { build } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
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
  // Not bindings: `gate.run` over IoRedisStore, then the two commands it sends without it, each
  // against `SET NX PX` + `SET` by hand (`pnpm bench`'s Redis row at c=1), on an ioredis client
  // of a Redis that the parent runs under valgrind too, so that both processes are counted.
  redis: () =>
    redisSides(async (client) => {
      const { IoRedisStore } = await import('@hookgate/ioredis');
      const gate = createGate({ store: new IoRedisStore(client), eventId: 'id' });
      const handler = () => 'ok';
      return async (id) =>
        (await gate.run({ payload: { id } }, handler)).status === 'processed' ? 200 : 500;
    }),
  // The claim `gate.run` sends, then a done script by `EVALSHA`, by hand: hookgate's; one that
  // only returns (what calling a script costs); the least owner-checked one (`GET`, compare,
  // `SET`), which drops parts of the done contract (docs/benchmarks.md, Peers).
  'redis-commands': () =>
    claimThenScript(
      async () => (await import('@hookgate/redis-core')).scripts.done.lua,
      (token, doneTtl) => [token, doneTtl, token], // the record: the bare token
    ),
  'redis-empty-script': () =>
    claimThenScript(
      async () => 'return 1',
      () => [],
    ),
  'redis-minimal-script': () =>
    claimThenScript(
      async () => `if redis.call('GET', KEYS[1]) == ARGV[1] then
        redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`,
      (token, doneTtl) => ['p:' + token, token, doneTtl],
    ),
};
/**
 * A Redis row's two sides on one ioredis client of the server whose port the parent gives:
 * `first`, given a fresh event id, then `SET NX PX` + `SET` by hand.
 */
async function redisSides(
  make: (client: Redis) => Promise<(id: string) => Promise<number>>,
): Promise<[Call, Call]> {
  const [{ Redis }, { baselineNew, ioredisCommands, nextId }] = await Promise.all([
    import('ioredis'),
    import('./src/redis.js'),
  ]);
  const client = new Redis({ host: '127.0.0.1', port: Number(process.env[REDIS_PORT]) });
  const first = await make(client);
  const raw = ioredisCommands(client);
  return [
    () => first(nextId()),
    async () => {
      await baselineNew(raw, nextId());
      return 200;
    },
  ];
}
/**
 * A Redis row whose first side sends the claim `gate.run` sends (`SET key p:<token> PX 300000
 * NX GET`), then `lua` by `EVALSHA` with `args(token)`, which must answer 1.
 */
function claimThenScript(
  lua: () => Promise<string>,
  args: (token: string, doneTtl: number) => (string | number)[],
): Promise<[Call, Call]> {
  return redisSides(async (client) => {
    const { CLAIM_TTL, DONE_TTL } = await import('./src/redis.js');
    const sha = (await client.script('LOAD', await lua())) as string;
    let tokens = 2 ** 52; // 16 digits, as the gate's owner tokens
    return async (id) => {
      const key = `hookgate:evt:${id}`;
      const token = String(tokens++);
      if ((await client.set(key, 'p:' + token, 'PX', CLAIM_TTL, 'NX', 'GET')) !== null) return 500;
      return (await client.evalsha(sha, 1, key, ...args(token, DONE_TTL))) === 1 ? 200 : 500;
    };
  });
}

/** How many requests each row has in flight: one delivery at a time over Redis, as its c=1 row. */
const inFlight = (row: string) => (row.startsWith('redis') ? 1 : IN_FLIGHT);
/** The environment variable that gives a Redis row's child its server's port. */
const REDIS_PORT = 'HOOKGATE_INSTRUCTIONS_REDIS_PORT';
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
  await Promise.all(Array.from({ length: inFlight(row) }, worker));
  process.exit(0); // a row's client may hold its connection open
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
  const counts = new Map<string, number[]>();
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
  // Per request, for each process counted (a Redis row's: Node, then Redis).
  const perRequest = (row: string, side: number) => {
    const [short, long] = [
      counts.get(`${row}/${side}/${SHORT}`)!,
      counts.get(`${row}/${side}/${LONG}`)!,
    ];
    return long.map((n, i) => (n - short[i]!) / (LONG - SHORT));
  };
  console.log(
    `instructions per request, in process, ${IN_FLIGHT} in flight (${SHORT} and ${LONG} requests;` +
      ' the Redis rows one at a time):',
  );
  console.log(`  ${'row'.padEnd(28)} ${SIDES[0].padStart(12)} ${SIDES[1].padStart(12)}   ratio`);
  const k = (n: number) => `${(n / 1000).toFixed(1)}k`.padStart(12);
  const line = (name: string, binding: number, hand: number) =>
    console.log(`  ${name.padEnd(28)} ${k(binding)} ${k(hand)}   ${(hand / binding).toFixed(3)}x`);
  for (const row of rows) {
    const [binding, hand] = [perRequest(row, 0), perRequest(row, 1)];
    if (binding.length === 1) line(row, binding[0]!, hand[0]!);
    else {
      line(`${row}: Node`, binding[0]!, hand[0]!);
      line(`${row}: Redis`, binding[1]!, hand[1]!);
      line(`${row}: both`, binding[0]! + binding[1]!, hand[0]! + hand[1]!);
    }
  }
  if (rows.some((row) => row.startsWith('redis'))) {
    console.log('  redis: gate.run over IoRedisStore (the binding column) against SET NX PX + SET');
    console.log('  by hand; redis-commands: the two commands gate.run sends (SET NX PX GET, the');
    console.log('  done script by EVALSHA), by hand; redis-empty-script and redis-minimal-script:');
    console.log(
      '  the same claim, then `return 1` or GET, compare, SET as the script. Node is the',
    );
    console.log('  client process, Redis its server');
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

/**
 * Instructions executed by a child process posting `requests` deliveries to a row's side; for
 * a Redis row, also those of its Redis server, a `redis-server` of its own under valgrind.
 */
async function count(row: string, side: number, requests: number): Promise<number[]> {
  const what = `${row}/${SIDES[side]} × ${requests}`;
  if (!row.startsWith('redis')) return [await instructions(what, node(row, side, requests))];
  // Imported here, not at the top: a child would load it too, and what a child loads moves
  // where its collections fall.
  const { freePort, rawCommand, REDIS_SERVER } = await import('@hookgate/redis-harness');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-instructions-'));
  // Its timers run once a second (`hz 1`) and jemalloc purges from no thread of its own, so that
  // little of what it executes depends on how long the run takes under valgrind.
  const server = instructions(`redis for ${what}`, [
    REDIS_SERVER,
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''],
    ...['--logfile', join(dir, 'log')],
    ...['--appendonly', 'no', '--hz', '1', '--dynamic-hz', 'no', '--jemalloc-bg-thread', 'no'],
  ]);
  server.catch(() => undefined); // awaited below, unless the client failed first
  let client: number;
  try {
    await ready(port, rawCommand);
    client = await instructions(what, node(row, side, requests), { [REDIS_PORT]: String(port) });
  } finally {
    // Redis closes the connection instead of answering; valgrind then prints its count.
    await rawCommand(port, ['SHUTDOWN', 'NOSAVE']).catch(() => undefined);
  }
  try {
    return [client, await server];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Wait for a server starting under valgrind (a few seconds) to answer. */
async function ready(
  port: number,
  rawCommand: (port: number, args: string[], timeoutMs: number) => Promise<unknown>,
): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      if ((await rawCommand(port, ['PING'], 1_000)) === 'PONG') return;
    } catch (error) {
      if (tries >= 120) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The command line of a child process posting `requests` deliveries to a row's side. */
function node(row: string, side: number, requests: number): string[] {
  return [
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
}

/** Run `command` under valgrind's cachegrind: the instructions it executed, once it exits. */
function instructions(
  what: string,
  command: string[],
  env: Record<string, string> = {},
): Promise<number> {
  const args = [
    '--tool=cachegrind',
    '--cache-sim=no',
    '--cachegrind-out-file=/dev/null',
    // V8 writes code into memory it then runs: valgrind must see each rewrite.
    '--smc-check=all-non-file',
    ...command,
  ];
  return new Promise((resolve, reject) => {
    const run = spawn('valgrind', args, {
      stdio: ['ignore', 'inherit', 'pipe'],
      env: { ...process.env, ...env },
    });
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
        reject(new Error(`valgrind exited ${code} for ${what}:\n${stderr}`));
      } else resolve(Number(refs.replaceAll(',', '')));
    });
  });
}

/**
 * Each binding against the same framework route written by hand with the baseline commands,
 * loaded by autocannon on loopback. Every request carries a new event id, so every request
 * is a claim, the handler and a done.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '@hookgate/redis-harness';
import autocannon from 'autocannon';
import type { Plan, Row, Stats } from './measure.js';

const SERVER = fileURLToPath(new URL('./http-server.ts', import.meta.url));
const CONNECTIONS = 32;

/**
 * Start the benchmark's server for `framework` (see `http-server.ts`), with `execArgv` added to
 * the node options it inherits (e.g. `--cpu-prof`).
 */
export async function startServer(
  framework: string,
  redisPort: number,
  execArgv: string[] = [],
): Promise<{ port: number; child: ChildProcess }> {
  // fork() passes on this process's execArgv: tsx's loader (the packages are their built dist/).
  const child = fork(SERVER, [framework, String(redisPort)], {
    stdio: 'inherit',
    execArgv: [...process.execArgv, ...execArgv],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${framework} server exited (${code})`)));
  });
  return { port, child };
}

/** Ask the server something over IPC, and wait for the answer that has `field`. */
export function askServer<T>(child: ChildProcess, field: string): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown) => {
      const answer = (message as Record<string, unknown>)[field];
      if (answer === undefined) return;
      child.off('message', onMessage);
      resolve(answer as T);
    };
    child.on('message', onMessage);
    child.send({ [field]: true });
  });
}

let counter = 0;

interface Acc {
  requests: number;
  seconds: number;
  p50: number[];
  p99: number[];
  failed: number;
  /** The server process's CPU time over these loads, in ms. */
  cpuMs: number;
}

/** The server's CPU time so far, in ms (user + system). */
async function serverCpuMs(child: ChildProcess): Promise<number> {
  const cpu = await askServer<NodeJS.CpuUsage>(child, 'cpu');
  return (cpu.user + cpu.system) / 1000;
}

/** POST a new event to `path` from 32 connections for `seconds`. */
export function loadRoute(port: number, path: string, seconds: number) {
  return autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => {
          request.body = JSON.stringify({
            id: `evt_${(counter++).toString(36)}`,
            type: 'invoice.paid',
            created: 1_700_000_000,
            data: { object: { id: 'in_1', customer: 'cus_1', total: 4200, currency: 'eur' } },
          });
          return request;
        },
      },
    ],
  });
}

async function load(
  server: { port: number; child: ChildProcess },
  path: string,
  seconds: number,
  into: Acc,
): Promise<void> {
  const cpuBefore = await serverCpuMs(server.child);
  const result = await loadRoute(server.port, path, seconds);
  into.requests += result.requests.total;
  into.seconds += result.duration;
  into.p50.push(result.latency.p50);
  into.p99.push(result.latency.p99);
  into.failed += result.non2xx + result.errors + result.timeouts;
  into.cpuMs += (await serverCpuMs(server.child)) - cpuBefore;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function stats(acc: Acc): Stats {
  return {
    opsPerSec: acc.requests / acc.seconds,
    // The server's CPU time, not this process's (autocannon's): what the route costs.
    opsPerCpuSec: acc.requests / (acc.cpuMs / 1000),
    p50: mean(acc.p50),
    p99: mean(acc.p99),
    ops: acc.requests,
  };
}

export async function httpBench(redis: RedisServer, plan: Plan): Promise<Row[]> {
  const rows: Row[] = [];
  const seconds = Math.max(1, Math.round(plan.roundMs / 1000));
  // HOOKGATE_BENCH_FRAMEWORKS=hono,koa measures only those. Fastify over HTTP only when named
  // there (HOOKGATE_BENCH_FRAMEWORKS=fastify): another 11 s would take the run past 3 minutes,
  // and its default row is the in-process one (fastify.ts).
  const only = process.env.HOOKGATE_BENCH_FRAMEWORKS?.split(',');
  const frameworks =
    only === undefined
      ? ['express', 'koa', 'hono']
      : ['express', 'koa', 'hono', 'fastify'].filter((f) => only.includes(f));
  for (const framework of frameworks) {
    await redis.command('FLUSHALL');
    const server = await startServer(framework, redis.port);
    const { child } = server;
    try {
      const fresh = (): Acc => ({ requests: 0, seconds: 0, p50: [], p99: [], failed: 0, cpuMs: 0 });
      const gated = fresh();
      const base = fresh();
      // Warm-up: JIT, connection pools, Redis script cache.
      await load(server, '/hookgate', 1, fresh());
      await load(server, '/baseline', 1, fresh());
      for (let round = 0; round < plan.rounds; round++) {
        const order: [string, Acc][] = [
          ['/hookgate', gated],
          ['/baseline', base],
        ];
        if (round % 2 === 1) order.reverse();
        for (const [path, acc] of order) await load(server, path, seconds, acc);
      }
      const failed = gated.failed + base.failed;
      const perRequest = (acc: Acc) => ((acc.cpuMs * 1000) / acc.requests).toFixed(0);
      const cpu =
        `server CPU per request ${perRequest(gated)} µs, by hand ${perRequest(base)} µs: ` +
        `${(base.cpuMs / base.requests / (gated.cpuMs / gated.requests)).toFixed(2)}x`;
      rows.push({
        section: 'HTTP',
        name: `${framework}: hookgate() route, ${CONNECTIONS} connections`,
        stats: stats(gated),
        baseline: { name: 'same route by hand', stats: stats(base) },
        target: { ratio: 0.95 },
        perCpu: true,
        note: failed > 0 ? `${cpu}; ${failed} non-2xx or failed requests` : cpu,
      });
    } finally {
      child.disconnect();
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  return rows;
}

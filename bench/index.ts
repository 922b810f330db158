/**
 * `pnpm bench`: hookgate against raw-client baselines, all measured in one run, printed as one
 * Markdown table. It starts its own Redis (never the shared one on 6379) and stops it after.
 *
 *   pnpm bench                     the full run (under three minutes, once built)
 *   pnpm bench --quick             shorter rounds, for a smoke test (HOOKGATE_BENCH_QUICK=1 too)
 *   pnpm bench --only=redis,http   some sections: memory, keys, gate-cpu, redis, peers, postgres,
 *                                  http, fetch, fastify, otel
 *   pnpm bench --burn              the whole run with a second process burning one core
 *                                  (HOOKGATE_BENCH_BURN=1 too); without it, the peers section
 *                                  measures its rows both ways
 *
 * The postgres section uses the shared PostgreSQL on 127.0.0.1:5432 (database `test`), in
 * tables of its own that it drops.
 *
 * It measures the built packages (dist/, the JavaScript users install): `pnpm bench` runs
 * `pnpm build` first when a package's build is missing or older than its sources
 * (scripts/ensure-built.mjs). Only this harness goes through tsx.
 */
import { cpus, loadavg } from 'node:os';
import { startRedis } from '@hookgate/redis-harness';
import { fastifyBench } from './src/fastify.js';
import { fetchBench } from './src/fetch.js';
import { gateCpuBench } from './src/gate-cpu.js';
import { httpBench } from './src/http.js';
import { keysBench } from './src/keys.js';
import { type Burner, type Plan, type Row, startBurner } from './src/measure.js';
import { memoryBench } from './src/memory.js';
import { otelBench } from './src/otel.js';
import { peersBench } from './src/peers.js';
import { postgresBench } from './src/postgres.js';
import { redisBench } from './src/redis.js';
import { formatTable } from './src/table.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick') || process.env.HOOKGATE_BENCH_QUICK === '1';
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (section: string) => only === undefined || only.includes(section);
const burn = args.includes('--burn') || process.env.HOOKGATE_BENCH_BURN === '1';

const plans: Record<'micro' | 'inject' | 'redis' | 'peers' | 'http', Plan> = quick
  ? {
      micro: { rounds: 2, roundMs: 200, warmupMs: 100 },
      inject: { rounds: 2, roundMs: 200, warmupMs: 100 },
      redis: { rounds: 2, roundMs: 300, warmupMs: 100 },
      peers: { rounds: 2, roundMs: 300, warmupMs: 100 },
      http: { rounds: 1, roundMs: 1000, warmupMs: 0 },
    }
  : {
      // Sized so that the whole run stays under three minutes (the header prints each
      // section's seconds): rounds are fixed in time, whatever the machine's load.
      micro: { rounds: 4, roundMs: 300, warmupMs: 200 },
      // A whole Fastify pipeline per operation (about 90 µs, a third of it GC): in rounds of
      // 300 ms the two sides' ratio moved from 0.73x to 1.23x between runs of the same code;
      // twice as many shorter rounds alternate the sides more often.
      inject: { rounds: 8, roundMs: 200, warmupMs: 300 },
      // Four rounds, not five, since a run on a slow day took 184 s with five.
      redis: { rounds: 4, roundMs: 400, warmupMs: 300 },
      // Four sides, and every comparison twice (quiet, then one core burnt).
      peers: { rounds: 4, roundMs: 400, warmupMs: 300 },
      // autocannon runs whole seconds.
      http: { rounds: 2, roundMs: 2000, warmupMs: 0 },
    };

const started = performance.now();
const loadBefore = loadavg();
const rows: Row[] = [];
const redis = wanted('redis') || wanted('peers') || wanted('http') ? await startRedis() : undefined;
const burner: Burner | undefined = burn ? await startBurner() : undefined;
const sections: [string, () => Promise<Row[]>][] = [
  ['memory', () => memoryBench(plans.micro)],
  ['keys', () => keysBench(plans.micro)],
  ['gate-cpu', () => gateCpuBench(plans.micro)],
  ['redis', () => redisBench(redis!, plans.redis)],
  ['peers', () => peersBench(redis!, plans.peers, burn ? 'already' : 'both')],
  ['postgres', () => postgresBench(plans.redis)],
  ['http', () => httpBench(redis!, plans.http)],
  ['fetch', () => fetchBench(plans.micro)],
  ['fastify', () => fastifyBench(plans.inject)],
  ['otel', () => otelBench(plans.micro)],
];
/** Seconds each section took, to keep the whole run under three minutes. */
const took: string[] = [];
try {
  for (const [name, run] of sections) {
    if (!wanted(name)) continue;
    const t = performance.now();
    rows.push(...(await run()));
    took.push(`${name} ${((performance.now() - t) / 1000).toFixed(0)}`);
  }
} finally {
  burner?.stop();
  const version = redis ? (await redis.info('server'))['redis_version'] : undefined;
  await redis?.dispose();
  const cpu = cpus();
  console.log(
    [
      `hookgate bench${quick ? ' (quick)' : ''}${burner ? ` (one core burnt by pid ${burner.pid})` : ''}: ${cpu.length} x ${cpu[0]?.model.trim()}, ` +
        `Node ${process.version}${version ? `, Redis ${version}` : ''}`,
      `load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ` +
        `${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} after; ${((performance.now() - started) / 1000).toFixed(0)} s ` +
        `(${took.join(', ')})`,
      '',
      formatTable(rows),
    ].join('\n'),
  );
}

/**
 * `pnpm bench`: hookgate against raw-client baselines, all measured in one run, printed as one
 * Markdown table. It starts its own Redis (never the shared one on 6379) and stops it after.
 *
 *   pnpm bench                     the full run (about two minutes)
 *   pnpm bench --quick             shorter rounds, for a smoke test (HOOKGATE_BENCH_QUICK=1 too)
 *   pnpm bench --only=redis,http   some sections: memory, keys, redis, postgres, http, fetch, fastify, otel
 *
 * The postgres section uses the shared PostgreSQL on 127.0.0.1:5432 (database `test`), in
 * tables of its own that it drops.
 */
import { cpus, loadavg } from 'node:os';
import { startRedis } from '@hookgate/redis-harness';
import { fastifyBench } from './src/fastify.js';
import { fetchBench } from './src/fetch.js';
import { httpBench } from './src/http.js';
import { keysBench } from './src/keys.js';
import type { Plan, Row } from './src/measure.js';
import { memoryBench } from './src/memory.js';
import { otelBench } from './src/otel.js';
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

const plans: Record<'micro' | 'redis' | 'http', Plan> = quick
  ? {
      micro: { rounds: 2, roundMs: 200, warmupMs: 100 },
      redis: { rounds: 2, roundMs: 300, warmupMs: 100 },
      http: { rounds: 1, roundMs: 1000, warmupMs: 0 },
    }
  : {
      micro: { rounds: 4, roundMs: 500, warmupMs: 300 },
      redis: { rounds: 8, roundMs: 400, warmupMs: 300 },
      http: { rounds: 2, roundMs: 2000, warmupMs: 0 },
    };

const started = performance.now();
const loadBefore = loadavg();
const rows: Row[] = [];
const redis = wanted('redis') || wanted('http') ? await startRedis() : undefined;
try {
  if (wanted('memory')) rows.push(...(await memoryBench(plans.micro)));
  if (wanted('keys')) rows.push(...(await keysBench(plans.micro)));
  if (redis && wanted('redis')) rows.push(...(await redisBench(redis, plans.redis)));
  if (wanted('postgres')) rows.push(...(await postgresBench(plans.redis)));
  if (redis && wanted('http')) rows.push(...(await httpBench(redis, plans.http)));
  if (wanted('fetch')) rows.push(...(await fetchBench(plans.micro)));
  if (wanted('fastify')) rows.push(...(await fastifyBench(plans.micro)));
  if (wanted('otel')) rows.push(...(await otelBench(plans.micro)));
} finally {
  const version = redis ? (await redis.info('server'))['redis_version'] : undefined;
  await redis?.dispose();
  const cpu = cpus();
  console.log(
    [
      `hookgate bench${quick ? ' (quick)' : ''}: ${cpu.length} x ${cpu[0]?.model.trim()}, ` +
        `Node ${process.version}${version ? `, Redis ${version}` : ''}`,
      `load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ` +
        `${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} after; ${((performance.now() - started) / 1000).toFixed(0)} s`,
      '',
      formatTable(rows),
    ].join('\n'),
  );
}

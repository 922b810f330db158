/**
 * `pnpm bench:redis-cost [deliveries per round]`: Redis's own CPU per new delivery for each
 * command mix a claim + done can send, on a private Redis. Each mix is sent in pipelines of 500
 * deliveries, so that the figure is what Redis spends executing the commands rather than on the
 * system calls around them (which depend on how the client batches), and measured with
 * `INFO cpu` around each pass; the mixes alternate over six rounds (ABBA order) and the median
 * is printed, with the difference from the claim alone.
 *
 * - `claim`: `SET key p:<token> PX 300000 NX GET`, as `gate.run` claims.
 * - `claim + SET`: then a plain `SET` of the done record, as node-idempotency and the bench's
 *   by-hand baselines do (no owner check).
 * - `claim + done script`: then `EVALSHA` of hookgate's owner-checked done script, as `gate.run`
 *   does.
 * - `claim + empty script`: then `EVALSHA` of `return 1`: what calling a script costs before it
 *   does anything.
 */

import { scripts } from '@hookgate/redis-core';
import { startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';

const perRound = Number(process.argv[2] ?? 50_000);
if (!Number.isSafeInteger(perRound) || perRound < 500) {
  console.error('usage: pnpm bench:redis-cost [deliveries per round, at least 500; default 50000]');
  process.exit(2);
}
const ROUNDS = 6;
const PIPELINE = 500;

const server = await startRedis();
const redis = new Redis({ host: '127.0.0.1', port: server.port });
try {
  const done = (await redis.script('LOAD', scripts.done.lua)) as string;
  const empty = (await redis.script('LOAD', 'return 1')) as string;
  type Then = ((key: string, token: string) => unknown[]) | undefined;
  const mixes: [string, Then][] = [
    ['claim', undefined],
    ['claim + SET', (key, token) => ['set', key, 'd:' + token, 'PX', 86_400_000]],
    ['claim + done script', (key, token) => ['evalsha', done, 1, key, token, 86_400_000, '']],
    ['claim + empty script', (key, token) => ['evalsha', empty, 1, key, token, 86_400_000, '']],
  ];
  const cpuSeconds = async () => {
    const info = await redis.info('cpu');
    const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
    return field('used_cpu_user') + field('used_cpu_sys');
  };
  let n = 0;
  /** µs of Redis CPU per delivery for one pass of `perRound` deliveries. */
  const pass = async (then: Then): Promise<number> => {
    const before = await cpuSeconds();
    for (let sent = 0; sent < perRound; sent += PIPELINE) {
      const pipeline = redis.pipeline();
      for (let i = 0; i < PIPELINE; i++) {
        const key = `hookgate:evt:evt_${(n++).toString(36)}`;
        const token = String(4_503_599_627_370_496 + n);
        pipeline.set(key, 'p:' + token, 'PX', 300_000, 'NX', 'GET');
        if (then !== undefined) pipeline.call(...(then(key, token) as [string, ...string[]]));
      }
      const replies = await pipeline.exec();
      const failed = replies?.find(([error]) => error !== null);
      if (failed !== undefined) throw failed[0];
    }
    const used = ((await cpuSeconds()) - before) / perRound;
    await redis.flushall(); // the private server's: every pass starts from an empty keyspace
    return used * 1e6;
  };
  await pass(mixes[2]![1]); // warm-up
  const figures = mixes.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    const order = mixes.map((_, i) => (round % 2 === 0 ? i : mixes.length - 1 - i));
    for (const i of order) figures[i]!.push(await pass(mixes[i]![1]));
  }
  const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1]!;
  const claim = median(figures[0]!);
  console.log(
    `Redis CPU per delivery (median of ${ROUNDS} rounds of ${perRound.toLocaleString('en')}, pipelines of ${PIPELINE}):`,
  );
  mixes.forEach(([name], i) => {
    const us = median(figures[i]!);
    const more = i === 0 ? '' : `  (${(us - claim).toFixed(2)} µs more than the claim alone)`;
    console.log(`  ${name.padEnd(22)} ${us.toFixed(2)} µs${more}`);
  });
} finally {
  redis.disconnect();
  await server.dispose();
}

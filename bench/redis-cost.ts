/**
 * `pnpm bench:redis-cost [deliveries per round]`: the CPU that Redis and the client (this Node
 * process) spend per new delivery, for each way of sending a claim and a done, on a private
 * Redis 7.0. Each mix is sent in pipelines of 500 deliveries and measured around the same pass
 * with `INFO cpu` (Redis) and `process.cpuUsage()` (client). The mixes alternate over six rounds
 * (ABBA order), and the median and the range of the rounds are printed. Pipelining keeps the
 * figures to executing the commands: a real client that sends one delivery at a time pays a
 * system call or more per command on both sides, which these figures leave out.
 *
 * Every done is preceded by hookgate's claim, `SET key p:<token> PX 300000 NX GET`, and writes
 * the bare token (the compact record that the done script writes). The last reply of each
 * delivery is checked, so that a done that did nothing cannot pass for a cheap one.
 *
 * - `claim`: the claim alone.
 * - `+ SET PX`: a plain `SET key <token> PX <doneTtl>`, as node-idempotency does. No owner check.
 * - `+ SET XX KEEPTTL`, `+ SET XX GET PX`: no owner check either, for reference. `XX` only says
 *   that the key exists, not whose it is, and `GET` tells the old value after the overwrite. A
 *   key deleted (by `forget`, eviction or a failover) and claimed again by another delivery
 *   would be overwritten. `KEEPTTL` also keeps the claim's TTL instead of the done TTL.
 * - `+ done script`: `EVALSHA` of hookgate's done script, as `gate.run` does.
 * - `+ minimal script`: `EVALSHA` of a script that does the owner check and nothing else, with
 *   its arguments ready-made (`p:<token>`, then the record). It does not handle fingerprints,
 *   retries of done, or a done after the claim expired, and does not tell foreign values apart.
 * - `+ minimal function`: the same code as a Redis 7 Function (`FUNCTION LOAD`, `FCALL`).
 * - `+ empty script`, `+ empty function`: `return 1`, by `EVALSHA` and `FCALL`: what calling
 *   a script costs before it does anything.
 * - `+ WATCH/MULTI/EXEC`: `WATCH`, `GET`, `MULTI`, `SET`, `EXEC`, the one owner check that needs
 *   no script on 7.0 (`SET … IFEQ` came in 8.4). `WATCH` holds for its connection, so a client
 *   needs one connection for each delivery in flight, and two round trips: it reads the `GET`
 *   before it sends `MULTI`. Here the five commands are pipelined on a connection of their own;
 *   the wait between the two trips is left out.
 */

import { isDeepStrictEqual } from 'node:util';
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
const CLAIM_TTL = 300_000;
const DONE_TTL = 86_400_000;
const MINIMAL = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
// The function names its parameters as a script's globals are named: the same code runs in both.
const LIBRARY = `#!lua name=hookgate_bench
redis.register_function('done_minimal', function(KEYS, ARGV)
  ${MINIMAL}
end)
redis.register_function('empty', function() return 1 end)`;

const server = await startRedis();
const redis = new Redis({ host: '127.0.0.1', port: server.port });
const watcher = new Redis({ host: '127.0.0.1', port: server.port });
try {
  const doneSha = (await redis.script('LOAD', scripts.done.lua)) as string;
  const minimalSha = (await redis.script('LOAD', MINIMAL)) as string;
  const emptySha = (await redis.script('LOAD', 'return 1')) as string;
  await redis.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARY); // FLUSHALL leaves functions be
  type Command = (string | number)[];
  type Args = (token: string) => Command;
  interface Mix {
    name: string;
    /** Whether the done keeps the owner check; `n/a` when there is no done. */
    owner: 'yes' | 'no' | 'n/a';
    /** The commands of one delivery after the claim. */
    done: (key: string, token: string) => Command[];
    /** The reply the last command must give. */
    last: (token: string) => unknown;
    /** The connection to send on, when not the shared one (`WATCH` holds for a connection). */
    connection?: Redis;
  }
  /** A done by `EVALSHA` or `FCALL` of one key, which answers 1. */
  const calling = (name: string, owner: Mix['owner'], call: Command, args: Args): Mix => ({
    name,
    owner,
    done: (key, token) => [[...call, 1, key, ...args(token)]],
    last: () => 1,
  });
  /** The minimal script's arguments: the claim it expects, the record, the done TTL. */
  const ready: Args = (token) => ['p:' + token, token, DONE_TTL];
  const mixes: Mix[] = [
    { name: 'claim', owner: 'n/a', done: () => [], last: () => null },
    {
      name: '+ SET PX',
      owner: 'no',
      done: (key, token) => [['set', key, token, 'PX', DONE_TTL]],
      last: () => 'OK',
    },
    {
      name: '+ SET XX KEEPTTL',
      owner: 'no',
      done: (key, token) => [['set', key, token, 'XX', 'KEEPTTL']],
      last: () => 'OK',
    },
    {
      name: '+ SET XX GET PX',
      owner: 'no',
      done: (key, token) => [['set', key, token, 'XX', 'GET', 'PX', DONE_TTL]],
      last: (token) => 'p:' + token,
    },
    calling('+ done script', 'yes', ['evalsha', doneSha], (token) => [
      token,
      DONE_TTL,
      token, // the record: the bare token
    ]),
    calling('+ minimal script', 'yes', ['evalsha', minimalSha], ready),
    calling('+ minimal function', 'yes', ['fcall', 'done_minimal'], ready),
    calling('+ empty script', 'n/a', ['evalsha', emptySha], ready),
    calling('+ empty function', 'n/a', ['fcall', 'empty'], ready),
    {
      name: '+ WATCH/MULTI/EXEC',
      owner: 'yes',
      done: (key, token) => [
        ['watch', key],
        ['get', key],
        ['multi'],
        ['set', key, token, 'PX', DONE_TTL],
        ['exec'],
      ],
      last: () => ['OK'],
      connection: watcher,
    },
  ];
  const cpuSeconds = async () => {
    const info = await redis.info('cpu');
    const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
    return field('used_cpu_user') + field('used_cpu_sys');
  };
  let n = 0;
  /** µs of Redis CPU and of client CPU per delivery for one pass of `perRound` deliveries. */
  const pass = async ({ done, last, connection = redis }: Mix): Promise<[number, number]> => {
    const before = await cpuSeconds();
    const client = process.cpuUsage();
    for (let sent = 0; sent < perRound; sent += PIPELINE) {
      const pipeline = connection.pipeline();
      const tokens: string[] = [];
      for (let i = 0; i < PIPELINE; i++) {
        const key = `hookgate:evt:evt_${(n++).toString(36)}`;
        const token = String(4_503_599_627_370_496 + n);
        tokens.push(token);
        pipeline.call('set', key, 'p:' + token, 'PX', CLAIM_TTL, 'NX', 'GET');
        for (const [name, ...args] of done(key, token)) pipeline.call(name as string, ...args);
      }
      const replies = (await pipeline.exec())!;
      const each = replies.length / PIPELINE;
      tokens.forEach((token, i) => {
        const [error, reply] = replies[(i + 1) * each - 1]!;
        if (error !== null || !isDeepStrictEqual(reply, last(token))) {
          throw new Error(`unexpected reply: ${String(error ?? JSON.stringify(reply))}`);
        }
      });
    }
    const { user, system } = process.cpuUsage(client);
    const used = ((await cpuSeconds()) - before) / perRound;
    await redis.flushall(); // the private server's: every pass starts from an empty keyspace
    return [used * 1e6, (user + system) / perRound];
  };
  await pass(mixes[4]!); // warm-up
  const figures = mixes.map((): [number, number][] => []);
  for (let round = 0; round < ROUNDS; round++) {
    const order = mixes.map((_, i) => (round % 2 === 0 ? i : mixes.length - 1 - i));
    for (const i of order) figures[i]!.push(await pass(mixes[i]!));
  }
  const sorted = (values: number[]) => values.toSorted((a, b) => a - b);
  const median = (values: number[]) => sorted(values)[values.length >> 1]!;
  const claim = median(figures[0]!.map(([us]) => us));
  console.log(
    `CPU per delivery, µs: median of ${ROUNDS} rounds of ${perRound.toLocaleString('en')} (min-max), pipelines of ${PIPELINE}`,
  );
  console.log(
    `  ${'design'.padEnd(20)} ${'owner'.padEnd(5)} ${'Redis'.padEnd(20)} ${'vs claim'.padEnd(9)} client`,
  );
  mixes.forEach(({ name, owner }, i) => {
    const redisUs = sorted(figures[i]!.map(([us]) => us));
    const clientUs = sorted(figures[i]!.map(([, us]) => us));
    const range = (us: number[]) =>
      `${median(us).toFixed(2)} (${us[0]!.toFixed(2)}-${us.at(-1)!.toFixed(2)})`;
    const more = median(redisUs) - claim;
    const vsClaim = i === 0 ? '' : (more < 0 ? '' : '+') + more.toFixed(2);
    console.log(
      `  ${name.padEnd(20)} ${owner.padEnd(5)} ${range(redisUs).padEnd(20)} ${vsClaim.padEnd(9)} ${range(clientUs)}`,
    );
  });
  console.log(
    'Pipelined: one delivery at a time, Redis and the client also pay system calls per command.',
  );
} finally {
  redis.disconnect();
  watcher.disconnect();
  await server.dispose();
}

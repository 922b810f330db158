/**
 * `gate.run` over IoRedisStore and NodeRedisStore, each against its own client doing by hand
 * the least a correct claim needs: `SET key p:<token> NX PX` to claim, then a `SET` for done.
 */
import { randomUUID } from 'node:crypto';
import { createGate, type Gate } from '@hookgate/core';
import { type IoRedisClient, IoRedisStore } from '@hookgate/ioredis';
import { type NodeRedisCommands, NodeRedisStore } from '@hookgate/node-redis';
import type { RedisServer } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { payloadOfSize } from './keys.js';
import { alternate, asyncSide, type Plan, type Row } from './measure.js';

/** The claim's and the done record's TTLs, in milliseconds, on both sides of every row. */
export const CLAIM_TTL = 300_000;
export const DONE_TTL = 86_400_000;
const NS = 'hookgate';

/** The raw commands a baseline sends, over either client. */
export interface RawCommands {
  /** `SET key value NX PX ttl`: `true` when set. */
  setNx(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** `SET key value PX ttl`. */
  set(key: string, value: string, ttlMs: number): Promise<unknown>;
}

export function ioredisCommands(client: Redis): RawCommands {
  return {
    setNx: async (key, value, ttlMs) => (await client.set(key, value, 'PX', ttlMs, 'NX')) !== null,
    set: (key, value, ttlMs) => client.set(key, value, 'PX', ttlMs),
  };
}

/** The one command the node-redis baseline sends (a structural type, as the store does it). */
interface NodeRedisSet {
  set(key: string, value: string, options: object): Promise<unknown>;
}

export function nodeRedisCommands(client: NodeRedisSet): RawCommands {
  return {
    setNx: async (key, value, ttlMs) =>
      (await client.set(key, value, {
        expiration: { type: 'PX', value: ttlMs },
        condition: 'NX',
      })) !== null,
    set: (key, value, ttlMs) =>
      client.set(key, value, { expiration: { type: 'PX', value: ttlMs } }),
  };
}

let counter = 0;
/** A fresh event id: unique, short and cheap, the same for both sides. */
export const nextId = (): string => 'evt_' + (counter++).toString(36);

const handler = () => 'ok';

/** The hand-written new-delivery path: claim, the (empty) handler, done. Two commands. */
export async function baselineNew(raw: RawCommands, id: string): Promise<void> {
  const key = `${NS}:evt:${id}`;
  const token = randomUUID();
  if (!(await raw.setNx(key, 'p:' + token, CLAIM_TTL))) return;
  handler();
  await raw.set(key, 'd:' + token, DONE_TTL);
}

/**
 * The hand-written sequenced path: claim, a watermark write that also holds the subject (not
 * even compared), done, and the write that ends the hold. Four commands, as `gate.run` sends.
 */
export async function baselineSequenced(
  raw: RawCommands,
  id: string,
  subject: string,
  at: number,
): Promise<void> {
  const key = `${NS}:evt:${id}`;
  const seq = `${NS}:seq:${subject}`;
  const token = randomUUID();
  if (!(await raw.setNx(key, 'p:' + token, CLAIM_TTL))) return;
  await raw.set(seq, `h:${at + CLAIM_TTL}:${token}:${at}:evt:${id}`, 30 * DONE_TTL);
  handler();
  await raw.set(key, 'd:' + token, DONE_TTL);
  await raw.set(seq, `${at}:evt:${id}`, 30 * DONE_TTL);
}

export interface Client {
  name: string;
  raw: RawCommands;
  gate: Gate;
  sequenced: Gate;
  /** The same gate with `fingerprint: true`. */
  fingerprinted: Gate;
  /**
   * A sequenced gate over a store whose client view counts the commands it sends (round trips:
   * the store sends each on its own), for the count only: the wrapper costs a little CPU.
   */
  counted: { sequenced: Gate; sent(): number };
  close(): Promise<void>;
}

/** A view of `client` with only `methods`, each call counted. */
function counting<T extends object>(client: T, methods: readonly (keyof T & string)[]) {
  let sent = 0;
  const view = {} as T;
  for (const name of methods) {
    const method = client[name] as (...args: unknown[]) => unknown;
    (view as Record<string, unknown>)[name] = (...args: unknown[]) => {
      sent++;
      return method.apply(client, args);
    };
  }
  return { view, sent: () => sent };
}

const sequencedGate = (store: IoRedisStore | NodeRedisStore) =>
  createGate({ store, eventId: 'id', sequence: { subject: 'subject', occurredAt: 'at' } });

export async function connectClients(server: RedisServer): Promise<Client[]> {
  const io = new Redis({ host: '127.0.0.1', port: server.port });
  const nr = createClient({ socket: { host: '127.0.0.1', port: server.port } });
  nr.on('error', () => {});
  await Promise.all([io.ping(), nr.connect()]);
  const gates = (store: IoRedisStore | NodeRedisStore) => ({
    gate: createGate({ store, eventId: 'id' }),
    fingerprinted: createGate({ store, eventId: 'id', fingerprint: true }),
    sequenced: sequencedGate(store),
  });
  const ioCounted = counting(io as IoRedisClient, ['set', 'evalsha', 'eval']);
  // The view the store itself would use: without node-redis's own command timeout.
  const nrView = nr.withCommandOptions({ timeout: 0 }) as unknown as NodeRedisCommands;
  const nrCounted = counting<NodeRedisCommands>(nrView, ['set', 'evalSha', 'eval']);
  return [
    {
      name: 'ioredis',
      raw: ioredisCommands(io),
      ...gates(new IoRedisStore(io)),
      counted: {
        sequenced: sequencedGate(new IoRedisStore(ioCounted.view)),
        sent: ioCounted.sent,
      },
      close: async () => void io.disconnect(),
    },
    {
      name: 'node-redis',
      raw: nodeRedisCommands(nr),
      ...gates(new NodeRedisStore(nr)),
      counted: {
        sequenced: sequencedGate(new NodeRedisStore(nrCounted.view)),
        sent: nrCounted.sent,
      },
      close: async () => nr.destroy(),
    },
  ];
}

/** Events spread over this many subjects, each event newer than the last: all are applied. */
const SUBJECTS = 1000;
/** Done events redelivered by the duplicate benchmark. */
const DUPLICATES = 10_000;

/** Calls of each command the server ran since it started, by name (`INFO commandstats`). */
async function commandCalls(server: RedisServer): Promise<Map<string, number>> {
  const stats = await server.info('commandstats');
  const calls = new Map<string, number>();
  for (const [name, value] of Object.entries(stats)) {
    const match = /^cmdstat_(.+)$/.exec(name);
    const n = /(?:^|,)calls=(\d+)/.exec(value);
    if (match && n) calls.set(match[1]!, Number(n[1]));
  }
  return calls;
}

/** Per delivery, each command's calls between two {@link commandCalls}, leaving out INFO. */
function perDelivery(before: Map<string, number>, after: Map<string, number>, n: number) {
  const each = new Map<string, number>();
  for (const [name, calls] of after) {
    if (name === 'info') continue;
    const d = calls - (before.get(name) ?? 0);
    if (d > 0) each.set(name, d / n);
  }
  return each;
}

/** Deliveries whose Redis CPU is measured per row (c=64), apart from the timed rounds. */
const CPU_SAMPLE = 10_000;

/**
 * Redis's own CPU per operation (`INFO cpu`, user + system, before and after `count`
 * operations at c=64), in µs: what bounds one shard, whoever sends the commands.
 */
export async function serverCpu(
  server: RedisServer,
  one: () => Promise<unknown>,
  count = CPU_SAMPLE,
): Promise<number> {
  const cpu = async () => {
    const info = await server.info('cpu');
    return Number(info['used_cpu_user']) + Number(info['used_cpu_sys']);
  };
  const before = await cpu();
  let left = count;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (left-- > 0) await one();
    }),
  );
  return ((await cpu()) - before) * (1e6 / count);
}

/** A row's note on Redis CPU: the gate's and the baseline's, per delivery. */
async function cpuNote(
  server: RedisServer,
  gate: () => Promise<unknown>,
  base: () => Promise<unknown>,
): Promise<string> {
  const [g, b] = [await serverCpu(server, gate), await serverCpu(server, base)];
  return `Redis CPU ${g.toFixed(1)} µs per delivery, baseline ${b.toFixed(1)} µs (INFO cpu, ${CPU_SAMPLE.toLocaleString('en')} at c=64)`;
}

/** Sequenced deliveries counted, before the measured rounds, at c=64. */
const COUNTED = 4000;

/**
 * The sequenced path's round trips per delivery: the commands the store's client sends
 * (counted on the client), and what the server ran (`INFO commandstats` before and after,
 * which counts the commands a script runs as well as the script itself); the same for the
 * baseline. Returns the row's note.
 */
async function countSequenced(
  server: RedisServer,
  c: Client,
  next: () => { id: string; subject: string; at: number },
): Promise<string> {
  const pass = async (one: () => Promise<unknown>) => {
    const before = await commandCalls(server);
    let left = COUNTED;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (left-- > 0) await one();
      }),
    );
    return perDelivery(before, await commandCalls(server), COUNTED);
  };
  // Load the scripts first: a script's first run on a server is EVALSHA, NOSCRIPT, then EVAL.
  for (let i = 0; i < 10; i++) await c.counted.sequenced.run({ payload: next() }, handler);
  const sentBefore = c.counted.sent();
  let applied = 0;
  const gate = await pass(async () => {
    const outcome = await c.counted.sequenced.run({ payload: next() }, handler);
    if (outcome.status === 'processed') applied++;
  });
  const trips = (c.counted.sent() - sentBefore) / COUNTED;
  const base = await pass(() => {
    const e = next();
    return baselineSequenced(c.raw, e.id, e.subject, e.at);
  });
  const f = (n: number | undefined) => (n ?? 0).toFixed(2).replace(/\.?0+$/, '');
  const ran = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${f(n)} ${name.toUpperCase()}`)
      .join(' + ');
  const scripts = (gate.get('evalsha') ?? 0) + (gate.get('eval') ?? 0);
  const total = [...gate.values()].reduce((a, b) => a + b, 0);
  return (
    `${f(trips)} round trips per delivery after the subject hold: ${f(trips - scripts)} SET + ` +
    `${f(scripts)} EVALSHA, ${applied} of ${COUNTED} applied; Redis ran ${f(total)} commands ` +
    `per delivery (INFO commandstats, scripts' own included: ${ran(gate)}); baseline ${ran(base)}`
  );
}

export async function redisBench(server: RedisServer, plan: Plan): Promise<Row[]> {
  const rows: Row[] = [];
  const clients = await connectClients(server);
  const flush = () => server.command('FLUSHALL');
  try {
    for (const c of clients) {
      for (const concurrency of [1, 64]) {
        await flush();
        const [gate, base] = await alternate(
          [
            asyncSide(() => c.gate.run({ payload: { id: nextId() } }, handler), concurrency),
            asyncSide(() => baselineNew(c.raw, nextId()), concurrency),
          ],
          plan,
        );
        const note =
          concurrency === 64
            ? await cpuNote(
                server,
                () => c.gate.run({ payload: { id: nextId() } }, handler),
                () => baselineNew(c.raw, nextId()),
              )
            : undefined;
        rows.push({
          section: 'Redis',
          name: `${c.name}: new delivery, c=${concurrency}`,
          ...(note ? { note } : {}),
          stats: gate!,
          baseline: { name: 'SET NX PX + SET', stats: base! },
          target: { ratio: 0.9 },
        });
      }

      // Duplicates: redeliveries of events already done.
      await flush();
      const done = Array.from({ length: DUPLICATES }, nextId);
      for (const id of done) await c.gate.run({ payload: { id } }, handler);
      let d = 0;
      const redelivered = () => done[d++ % DUPLICATES]!;
      const [dup, dupBase] = await alternate(
        [
          asyncSide(() => c.gate.run({ payload: { id: redelivered() } }, handler), 64),
          asyncSide(
            () => c.raw.setNx(`${NS}:evt:${redelivered()}`, 'p:' + randomUUID(), CLAIM_TTL),
            64,
          ),
        ],
        plan,
      );
      rows.push({
        section: 'Redis',
        name: `${c.name}: duplicate, c=64`,
        note: await cpuNote(
          server,
          () => c.gate.run({ payload: { id: redelivered() } }, handler),
          () => c.raw.setNx(`${NS}:evt:${redelivered()}`, 'p:' + randomUUID(), CLAIM_TTL),
        ),
        stats: dup!,
        baseline: { name: 'SET NX PX (fails)', stats: dupBase! },
      });

      // Sequenced: every event newer than its subject's watermark, so every one is applied.
      await flush();
      let at = Date.now() - 60_000;
      let s = 0;
      const sequenced = () => ({
        id: nextId(),
        subject: `sub_${s++ % SUBJECTS}`,
        at: at++,
      });
      const count = await countSequenced(server, c, sequenced);
      const [seq, seqBase] = await alternate(
        [
          asyncSide(() => c.sequenced.run({ payload: sequenced() }, handler), 64),
          asyncSide(() => {
            const e = sequenced();
            return baselineSequenced(c.raw, e.id, e.subject, e.at);
          }, 64),
        ],
        plan,
      );
      const seqCpu = await cpuNote(
        server,
        () => c.sequenced.run({ payload: sequenced() }, handler),
        () => {
          const e = sequenced();
          return baselineSequenced(c.raw, e.id, e.subject, e.at);
        },
      );
      rows.push({
        section: 'Redis',
        name: `${c.name}: sequenced, c=64`,
        note: `${count}; ${seqCpu}`,
        stats: seq!,
        baseline: { name: '4 x SET', stats: seqBase! },
      });

      // The fingerprint's cost where it is paid in practice: over a store's round trips.
      if (c.name !== 'ioredis') continue;
      for (const [label, size] of [
        ['1 KB', 1024],
        ['16 KB', 16 * 1024],
      ] as const) {
        await flush();
        const body = payloadOfSize(size);
        const delivery = () => ({ payload: { ...body, id: nextId() } });
        const [printed, plain] = await alternate(
          [
            asyncSide(() => c.fingerprinted.run(delivery(), handler), 1),
            asyncSide(() => c.gate.run(delivery(), handler), 1),
          ],
          plan,
        );
        rows.push({
          section: 'Fingerprint',
          name: `${c.name}: new delivery with fingerprint: true, ${label} payload, c=1`,
          stats: printed!,
          baseline: { name: 'the same gate without it', stats: plain! },
        });
      }
    }
  } finally {
    for (const c of clients) await c.close();
  }
  return rows;
}

/**
 * `gate.run` over IoRedisStore and NodeRedisStore, each against its own client doing by hand
 * the least a correct claim needs: `SET key p:<token> NX PX` to claim, then a `SET` for done.
 */
import { randomUUID } from 'node:crypto';
import { createGate, type Gate } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { NodeRedisStore } from '@hookgate/node-redis';
import type { RedisServer } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { payloadOfSize } from './keys.js';
import { alternate, asyncSide, type Plan, type Row } from './measure.js';

const CLAIM_TTL = 300_000;
const DONE_TTL = 86_400_000;
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
  close(): Promise<void>;
}

export async function connectClients(server: RedisServer): Promise<Client[]> {
  const io = new Redis({ host: '127.0.0.1', port: server.port });
  const nr = createClient({ socket: { host: '127.0.0.1', port: server.port } });
  nr.on('error', () => {});
  await Promise.all([io.ping(), nr.connect()]);
  const gates = (store: IoRedisStore | NodeRedisStore) => ({
    gate: createGate({ store, eventId: 'id' }),
    fingerprinted: createGate({ store, eventId: 'id', fingerprint: true }),
    sequenced: createGate({
      store,
      eventId: 'id',
      sequence: { subject: 'subject', occurredAt: 'at' },
    }),
  });
  return [
    {
      name: 'ioredis',
      raw: ioredisCommands(io),
      ...gates(new IoRedisStore(io)),
      close: async () => void io.disconnect(),
    },
    {
      name: 'node-redis',
      raw: nodeRedisCommands(nr),
      ...gates(new NodeRedisStore(nr)),
      close: async () => nr.destroy(),
    },
  ];
}

/** Events spread over this many subjects, each event newer than the last: all are applied. */
const SUBJECTS = 1000;
/** Done events redelivered by the duplicate benchmark. */
const DUPLICATES = 10_000;

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
        rows.push({
          section: 'Redis',
          name: `${c.name}: new delivery, c=${concurrency}`,
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
        stats: dup!,
        baseline: { name: 'SET NX PX (fails)', stats: dupBase! },
      });

      // Sequenced: every event newer than its subject's watermark, so every one is applied.
      await flush();
      let at = Date.now() - 60_000;
      let s = 0;
      const [seq, seqBase] = await alternate(
        [
          asyncSide(
            () =>
              c.sequenced.run(
                { payload: { id: nextId(), subject: `sub_${s++ % SUBJECTS}`, at: at++ } },
                handler,
              ),
            64,
          ),
          asyncSide(() => baselineSequenced(c.raw, nextId(), `sub_${s++ % SUBJECTS}`, at++), 64),
        ],
        plan,
      );
      rows.push({
        section: 'Redis',
        name: `${c.name}: sequenced, c=64`,
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

/**
 * The gate's own CPU per new delivery over a Redis store: `gate.run` over IoRedisStore on a
 * client that answers every command at once (no socket, no server), against the same two
 * commands sent by hand to that client. What is left is what hookgate adds in Node per delivery:
 * key derivation, the owner token, the lease, the store's deadlines and reply mapping. A second
 * row gives the gate the body's bytes, as every HTTP binding does, against a baseline that
 * parses them itself: the parse, and what the gate does around it.
 */
import { createGate } from '@hookgate/core';
import { type IoRedisClient, IoRedisStore } from '@hookgate/ioredis';
import { alternate, asyncSide, type Plan, type Row, type Stats } from './measure.js';
import { baselineNew, nextId, type RawCommands } from './redis.js';

/**
 * An ioredis-shaped client that answers at once, as a fresh promise per command like a real
 * client: a claim finds the key free (`SET … NX GET` answers null), every script answers 1.
 */
const instant: IoRedisClient = {
  set: () => Promise.resolve(null),
  evalsha: () => Promise.resolve(1),
  eval: () => Promise.resolve(1),
};

/** The baseline's two commands on the same kind of client. */
const instantRaw: RawCommands = {
  setNx: () => Promise.resolve(true),
  set: () => Promise.resolve('OK'),
};

const handler = () => 'ok';

/** Webhook bodies as they come off the wire, made beforehand and used in turn. */
const BODIES = Array.from({ length: 4096 }, (_, i) =>
  new TextEncoder().encode(
    JSON.stringify({
      id: `evt_${i.toString(36)}`,
      type: 'invoice.paid',
      created: 1_700_000_000,
      data: { object: { id: 'in_1', customer: 'cus_1', total: 4200, currency: 'eur' } },
    }),
  ),
);
const HEADERS = { 'content-type': 'application/json' };
const text = new TextDecoder();

export async function gateCpuBench(plan: Plan): Promise<Row[]> {
  const gate = createGate({ store: new IoRedisStore(instant), eventId: 'id' });
  let next = 0;
  const body = () => BODIES[next++ & 4095]!;
  const [run, base, runRaw, baseRaw] = await alternate(
    [
      asyncSide(() => gate.run({ payload: { id: nextId() } }, handler), 1),
      asyncSide(() => baselineNew(instantRaw, nextId()), 1),
      asyncSide(() => gate.run({ rawBody: body(), headers: HEADERS }, handler), 1),
      asyncSide(() => {
        const payload = JSON.parse(text.decode(body())) as { id: string };
        return baselineNew(instantRaw, payload.id);
      }, 1),
    ],
    plan,
  );
  const us = (stats: Stats) => (1e6 / stats.opsPerCpuSec).toFixed(2);
  const row = (name: string, stats: Stats, baselineName: string, baseline: Stats): Row => ({
    section: 'Gate CPU',
    name,
    note: `${us(stats)} µs of CPU per delivery, the baseline ${us(baseline)} µs`,
    stats,
    baseline: { name: baselineName, stats: baseline },
    perCpu: true,
  });
  return [
    row(
      'gate.run over IoRedisStore, a client that answers at once',
      run!,
      'SET NX PX + SET by hand, a client of the same kind',
      base!,
    ),
    row(
      'the same, given the body bytes as a binding gives them',
      runRaw!,
      'JSON.parse, then the same by hand',
      baseRaw!,
    ),
  ];
}

/**
 * The gate's own CPU per new delivery over a Redis store: `gate.run` over IoRedisStore on a
 * client that answers every command at once (no socket, no server), against the same two
 * commands sent by hand to that client. What is left is what hookgate adds in Node per delivery:
 * key derivation, the owner token, the lease, the store's deadlines and reply mapping.
 */
import { createGate } from '@hookgate/core';
import { type IoRedisClient, IoRedisStore } from '@hookgate/ioredis';
import { alternate, asyncSide, type Plan, type Row } from './measure.js';
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

export async function gateCpuBench(plan: Plan): Promise<Row[]> {
  const gate = createGate({ store: new IoRedisStore(instant), eventId: 'id' });
  const [run, base] = await alternate(
    [
      asyncSide(() => gate.run({ payload: { id: nextId() } }, handler), 1),
      asyncSide(() => baselineNew(instantRaw, nextId()), 1),
    ],
    plan,
  );
  const us = (opsPerCpuSec: number) => (1e6 / opsPerCpuSec).toFixed(2);
  return [
    {
      section: 'Gate CPU',
      name: 'gate.run over IoRedisStore, a client that answers at once',
      note: `${us(run!.opsPerCpuSec)} µs of CPU per delivery, the baseline ${us(base!.opsPerCpuSec)} µs`,
      stats: run!,
      baseline: { name: 'SET NX PX + SET by hand, the same client', stats: base! },
      perCpu: true,
    },
  ];
}

/**
 * MemoryStore: claim + done cycles through `gate.run`, one at a time (one core).
 *
 * Every delivery is a new event, and done records expire. The store's clock is virtual and
 * moves 1 ms per delivery, so with `doneTtlMs: 80_000` about 80,000 done records are live at
 * any time (under the default bound of 100,000) and one expires for every one added: the
 * steady state of a process that has been receiving for longer than `doneTtl`, reached at
 * once. A second figure lets every record live (as a 24 h TTL does within a run), so the
 * map grows towards a million entries: bigger hash tables, more cache misses, more GC.
 */
import { createGate } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { payloadOfSize } from './keys.js';
import { alternate, asyncSide, type Plan, type Row, type Side } from './measure.js';

const handler = () => 'ok';

export async function memoryBench(plan: Plan): Promise<Row[]> {
  let clock = 1_000_000_000;
  const steady = createGate({
    store: new MemoryStore({ now: () => clock }),
    eventId: 'id',
    doneTtlMs: 80_000,
  });
  let n = 0;
  const [steadyStats] = await alternate(
    [
      asyncSide(() => {
        clock++;
        return steady.run({ payload: { id: 'evt_' + (n++).toString(36) } }, handler);
      }, 1),
    ],
    plan,
  );

  const growingStore = new MemoryStore({ maxEntries: 10_000_000 });
  const growing = createGate({ store: growingStore, eventId: 'id' });
  const [growingStats] = await alternate(
    [asyncSide(() => growing.run({ payload: { id: 'evt_' + (n++).toString(36) } }, handler), 1)],
    plan,
  );

  const rows: Row[] = [];
  // The fingerprint's cost: the same steady-state gate with and without it, on payloads of a
  // webhook's size. It is a canonical JSON and a SHA-256 of the payload per delivery.
  for (const [label, size] of [
    ['1 KB', 1024],
    ['16 KB', 16 * 1024],
  ] as const) {
    const body = payloadOfSize(size);
    const side = (fingerprint: boolean): Side => {
      let time = 1_000_000_000;
      const gate = createGate({
        store: new MemoryStore({ now: () => time }),
        eventId: 'id',
        doneTtlMs: 80_000,
        fingerprint,
      });
      return asyncSide(() => {
        time++;
        return gate.run({ payload: { ...body, id: 'evt_' + (n++).toString(36) } }, handler);
      }, 1);
    };
    const [withFingerprint, without] = await alternate([side(true), side(false)], plan);
    rows.push({
      section: 'Fingerprint',
      name: `gate.run with fingerprint: true, ${label} payload (MemoryStore)`,
      stats: withFingerprint!,
      baseline: { name: 'the same gate without it', stats: without! },
      perCpu: true,
    });
  }

  return [
    ...rows,
    {
      section: 'MemoryStore',
      name: 'gate.run claim + done, steady state (~80k live records)',
      stats: steadyStats!,
      target: { opsPerSec: 500_000 },
      perCpu: true,
    },
    {
      section: 'MemoryStore',
      name: `gate.run claim + done, nothing expires (grew to ${Math.round(growingStore.size / 1000)}k records)`,
      stats: growingStats!,
      perCpu: true,
    },
  ];
}

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
  const steadyStore = new MemoryStore({ now: () => clock });
  const steady = createGate({
    store: steadyStore,
    eventId: 'id',
    doneTtlMs: 80_000,
  });
  let n = 0;
  // The floor under it: what any Map-backed store does per claim + done, and nothing else: a
  // miss, a set, a hit, the oldest record deleted, in a map of as many live records, and one
  // resolved promise awaited.
  const floor = new Map<string, { value: string; expiresAt: number }>();
  let cursor = floor.entries();
  let oldest: [string, { value: string; expiresAt: number }] | undefined;
  const answer = Promise.resolve('ok');
  let floorClock = 1_000_000_000;
  const [steadyStats] = await alternate(
    [
      asyncSide(() => {
        clock++;
        return steady.run({ payload: { id: 'evt_' + (n++).toString(36) } }, handler);
      }, 1),
    ],
    plan,
  );
  // Measured after the gate rather than beside it, its records dropped: two maps of 80,000 live
  // records in one heap would make each side pay for the other's garbage collection.
  steadyStore.clear();
  const [floorStats] = await alternate(
    [
      asyncSide(() => {
        const now = ++floorClock;
        const key = 'hookgate:evt:evt_' + (n++).toString(36);
        const token = String(4_503_599_627_370_496 + n);
        if (floor.get(key) === undefined)
          floor.set(key, { value: 'p:' + token, expiresAt: now + 60_000 });
        const entry = floor.get(key)!;
        entry.value = token;
        entry.expiresAt = now + 80_000;
        if (oldest === undefined) {
          let next = cursor.next();
          if (next.done) {
            cursor = floor.entries();
            next = cursor.next();
          }
          oldest = next.value;
        }
        if (oldest !== undefined && oldest[1].expiresAt <= now) {
          floor.delete(oldest[0]);
          oldest = undefined;
        }
        return answer;
      }, 1),
    ],
    plan,
  );
  floor.clear();
  // The floor the target names, to the letter: one Map write of a new key and a resolved
  // promise, nothing else, the key written 80,000 deliveries before deleted so that as many
  // records stay live. No store can do less per claim + done.
  const written = new Map<string, number>();
  const ring: (string | undefined)[] = new Array(80_000).fill(undefined);
  const [writeStats] = await alternate(
    [
      asyncSide(() => {
        const at = n++;
        const key = 'hookgate:evt:evt_' + at.toString(36);
        written.set(key, at);
        const slot = at % ring.length;
        const old = ring[slot];
        if (old !== undefined) written.delete(old);
        ring[slot] = key;
        return answer;
      }, 1),
    ],
    plan,
  );
  written.clear();

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
      baseline: { name: 'the floor: a bare Map, the same records, a promise', stats: floorStats! },
      target: { opsPerSec: 1_000_000 },
      perCpu: true,
    },
    {
      section: 'MemoryStore',
      name: 'the floor the target names: one Map write of a new key and a resolved promise (80k live)',
      stats: writeStats!,
      target: { opsPerSec: 1_000_000 },
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

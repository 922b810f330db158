/**
 * What a Redis restart keeps: with `appendfsync always`, every done record; without
 * persistence, nothing, so a late redelivery of a done event runs its handler again.
 */
import { randomUUID } from 'node:crypto';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../src/ledger.js';
import { mulberry32, Provider } from '../src/provider.js';
import type { GrantEvent } from '../src/receiver.js';
import { report } from '../src/report.js';
import { seed } from '../src/util.js';
import { spawnWorker, stopAll, type Worker } from '../src/workers.js';

const secret = randomUUID();
const EVENTS = 40;

let durable: RedisServer;
let volatile: RedisServer;
let ledger: Ledger;
let workers: Worker[] = [];

beforeAll(async () => {
  [durable, volatile, ledger] = await Promise.all([
    startRedis({ appendonly: true, appendfsync: 'always' }),
    startRedis(),
    Ledger.open('persistence'),
  ]);
  const common = { table: ledger.table, secret, namespace: `rel-${randomUUID().slice(0, 8)}` };
  workers = await Promise.all([
    spawnWorker({ ...common, name: 'durable', redis: durable.url }),
    spawnWorker({ ...common, name: 'volatile', redis: volatile.url }),
  ]);
});

afterAll(async () => {
  await stopAll(workers);
  await Promise.all([durable?.dispose(), volatile?.dispose(), ledger?.close()]);
});

const events = (prefix: string): GrantEvent[] =>
  Array.from({ length: EVENTS }, (_, i) => ({
    id: `${prefix}-${i}`,
    grant_id: `grant-${prefix}-${i}`,
    occurred_at: 1_714_557_600 + i,
  }));

describe('a Redis restart', () => {
  it('SIGKILL and restart: with appendfsync always a late redelivery is a duplicate; without persistence the done records are gone and the handler runs again', async () => {
    const rng = mulberry32(seed());
    const [toDurable, toVolatile] = workers.map(
      (worker) => new Provider({ secret, rng, targets: () => [worker.url] }),
    ) as [Provider, Provider];
    const kept = events('aof');
    const lost = events('noaof');
    const deliverAll = (provider: Provider, list: GrantEvent[]) =>
      Promise.all(list.map((event) => provider.deliver(provider.body(event))));

    const before = [
      ...(await deliverAll(toDurable, kept)),
      ...(await deliverAll(toVolatile, lost)),
    ];
    expect(before.every((r) => r.ok)).toBe(true);
    expect(await volatile.command('DBSIZE')).toBe(EVENTS);

    await Promise.all([durable.kill(), volatile.kill()]);
    await Promise.all([durable.start(), volatile.start()]);
    const keysAfterRestart = {
      durable: await durable.command('DBSIZE'),
      volatile: await volatile.command('DBSIZE'),
    };

    const after = [...(await deliverAll(toDurable, kept)), ...(await deliverAll(toVolatile, lost))];
    expect(after.every((r) => r.ok)).toBe(true);
    const durableTally = await ledger.tally(
      'evt:aof-',
      kept.map((e) => `evt:${e.id}`),
    );
    const volatileRuns = await ledger.runs('evt:noaof-');
    report('restart-persistence', {
      events: EVENTS * 2,
      keysAfterRestart,
      durableDuplicates: durableTally.duplicates,
      durableLost: durableTally.lost,
      volatileRunsPerEvent: [...new Set(volatileRuns.values())],
    });
    expect(keysAfterRestart).toEqual({ durable: EVENTS, volatile: 0 });
    expect(durableTally.doubled).toEqual({});
    expect(durableTally.missing).toEqual([]);
    // The limit, shown: every event behind the non-persistent server ran twice.
    expect(volatileRuns.size).toBe(EVENTS);
    expect([...new Set(volatileRuns.values())]).toEqual([2]);
    for (const worker of workers) expect((await worker.stats()).unhandledRejections).toBe(0);
  });
});

/**
 * ioredis groups auto-pipelined commands by the node its slot map names when they are queued,
 * and checks the batch against the map again just before sending it. When a `MOVED` reply
 * updated the map in between (a burst of deliveries right after a resharding: the reliability
 * suite's reshard storm met it), the batch's keys belong to two nodes and ioredis rejects every
 * command of it unsent ("All keys in the pipeline should belong to the same slots allocation
 * group"). Never sent, so the store sends it again rather than answering 503.
 */
import { keySlot, type RedisCluster, startCluster } from '@hookgate/redis-harness';
import * as ioredis5 from 'ioredis5';
import * as ioredis6 from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoRedisStore } from '../src/index.js';

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startCluster({ masters: 3 });
});
afterAll(async () => {
  await cluster?.dispose();
});

for (const major of [5, 6] as const) {
  describe(`ioredis ${major} with auto-pipelining`, () => {
    it('a batch refused unsent, split by a slot map updated after it was queued, is sent again', async () => {
      const { Cluster } = major === 5 ? ioredis5 : ioredis6;
      const client = new Cluster(cluster.rootNodes, { enableAutoPipelining: true });
      client.on('error', () => {});
      try {
        await client.ping();
        const store = new IoRedisStore(client, { timeoutMs: 2_000 });
        const run = crypto.randomUUID().slice(0, 8);
        // Two keys in different slots of one master.
        const first = `unsent-${run}:evt:a`;
        const source = await cluster.masterFor(first);
        let second = '';
        for (let i = 0; second === ''; i++) {
          const candidate = `unsent-${run}:evt:b${i}`;
          const owner = await cluster.masterFor(candidate);
          if (owner.port === source.port && keySlot(candidate) !== keySlot(first))
            second = candidate;
        }
        // The second key's (empty) slot moves to another master behind the client's back.
        const slot = keySlot(second);
        const target = (await cluster.masters()).find((m) => m.port !== source.port)!;
        await cluster.moveSlot(slot, target);
        // A command for that slot goes out in a first batch, to the source (the client's map is
        // stale); the claims are queued in a second batch for the source while the first one is
        // on the wire. Its MOVED reply updates the map, and then the second batch is checked.
        let third = '';
        for (let i = 0; third === ''; i++) {
          const candidate = `unsent-${run}:evt:c${i}`;
          if (keySlot(candidate) === slot) third = candidate;
        }
        const moved = client.get(third);
        await new Promise((resolve) => setImmediate(resolve));
        const claims = [
          store.claim(first, 'token-a', 60_000),
          store.claim(second, 'token-b', 60_000),
        ];
        expect(await moved).toBeNull();
        expect(await Promise.all(claims)).toEqual(['acquired', 'acquired']);
        expect(await source.command('GET', first)).toBe('p:token-a');
        expect(await target.command('GET', second)).toBe('p:token-b');
      } finally {
        client.disconnect();
      }
    });
  });
}

import { createGate, type DecisionEvent } from '@hookgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot, type RedisCluster, startCluster } from '../cluster.js';
import type { RedisServer } from '../server.js';
import { type RedisClientVariant, type RedisDriver, tracked } from './driver.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A slot that moves while a claim is held: the store's command meets `-ASK` (the key is on the
 * importing node now) or `-MOVED` (the slot has moved), which proves it was not applied, and the
 * store resends it to the node named, with `ASKING` for an ASK, whatever the client does with
 * its pipelines (ioredis follows a redirection only when every command of an auto-pipelined
 * batch met the same one). Under the plain cluster client and every variant that has one.
 */
export function redirectTests<C extends object>(given: RedisDriver<C>): void {
  const driver = tracked(given);
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3 });
  });
  afterAll(async () => {
    driver.disposeAll();
    await cluster?.dispose();
  });

  const configurations: RedisClientVariant<C>[] = [
    {
      label: 'plain cluster client',
      client: (port) => driver.client(port),
      cluster: driver.cluster,
    },
    ...(driver.variants ?? []).filter((variant) => variant.cluster !== undefined),
  ];

  for (const { label, cluster: connect, keyPrefix = '' } of configurations) {
    describe(label, () => {
      it('a done met by ASK while its slot migrates is resent to the importing node: the event runs once', async () => {
        const client = await connect!(cluster.rootNodes);
        const store = driver.store(client, { timeoutMs: 2_000 });
        const decisions: DecisionEvent[] = [];
        const namespace = `redirect-${crypto.randomUUID().slice(0, 8)}`;
        const claimTtlMs = 1_000;
        const gate = createGate({
          store,
          eventId: 'id',
          namespace,
          claimTtlMs,
          onDecision: (event) => decisions.push(event),
        });
        const key = `${namespace}:evt:evt_1`;
        let runs = 0;
        let migration: Migration | undefined;
        let filling = true;
        try {
          const outcome = await gate.run({ payload: { id: 'evt_1' } }, async () => {
            runs++;
            migration = await migrate(cluster, keyPrefix + key);
            // Other commands for the migrating node, in the same auto-pipelined batches as
            // the done: a batch that mixes an -ASK with answers is not followed by the client.
            const fillers = await keysOn(cluster, migration, keyPrefix, 8);
            const fill = () => {
              if (!filling) return;
              for (const filler of fillers)
                void store.extend(filler, 'filler', 60_000).catch(() => {});
              setImmediate(fill);
            };
            fill();
            await sleep(20);
          });
          expect(outcome.status).toBe('processed');
          // The done landed on its first try, on the importing node.
          expect(decisions.filter((d) => d.decision === 'store-unavailable')).toEqual([]);
          expect(decisions.map((d) => d.decision)).toEqual(['new', 'done']);
        } finally {
          filling = false;
          await migration?.finish();
        }
        // A done record: the gate's tokens are numbers, and done is the bare token.
        expect(String(await migration!.target.command('GET', keyPrefix + key))).toMatch(/^\d+$/);
        await sleep(claimTtlMs + 200);
        expect((await gate.run({ payload: { id: 'evt_1' } }, () => runs++)).status).toBe(
          'duplicate',
        );
        expect(runs).toBe(1);
      });

      it('a claim met by MOVED after its slot moved is resent to the new owner', async () => {
        const client = await connect!(cluster.rootNodes);
        const store = driver.store(client, { timeoutMs: 2_000 });
        const key = `redirect-${crypto.randomUUID().slice(0, 8)}:evt:evt_2`;
        // Move an empty slot behind the client's back: its slot map still names the old owner.
        const migration = await migrate(cluster, keyPrefix + key);
        await migration.finish();
        const token = crypto.randomUUID();
        expect(await store.claim(key, token, 60_000)).toBe('acquired');
        expect(String(await migration.target.command('GET', keyPrefix + key))).toBe(`p:${token}`);
        expect(await store.done(key, token, 60_000)).toBe(true);
      });
    });
  }
}

interface Migration {
  slot: number;
  source: RedisServer;
  target: RedisServer;
  /** Assign the slot to the target on every master: the migration is over. */
  finish(): Promise<void>;
}

/**
 * Start moving `storedKey`'s slot from its master to another one, as `redis-cli --cluster
 * reshard` does: IMPORTING on the target, MIGRATING on the source, then the key itself.
 */
async function migrate(cluster: RedisCluster, storedKey: string): Promise<Migration> {
  const slot = Number(await cluster.nodes[0]!.command('CLUSTER', 'KEYSLOT', storedKey));
  const source = await cluster.masterFor(storedKey);
  const masters = await cluster.masters();
  const target = masters.find((master) => master.port !== source.port)!;
  const topology = await cluster.topology();
  const idOf = (server: RedisServer) => topology.find((node) => node.port === server.port)!.id;
  // Asked before the slot migrates: then an absent key is answered -ASK.
  const exists = (await source.command('EXISTS', storedKey)) === 1;
  await target.command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', idOf(source));
  await source.command('CLUSTER', 'SETSLOT', slot, 'MIGRATING', idOf(target));
  if (exists) {
    await source.command('MIGRATE', target.host, target.port, '', 0, 5_000, 'KEYS', storedKey);
  }
  return {
    slot,
    source,
    target,
    async finish() {
      for (const master of masters) {
        await master.command('CLUSTER', 'SETSLOT', slot, 'NODE', idOf(target));
      }
    },
  };
}

/** `count` keys (as the store names them) that the migration's source serves, outside its slot. */
async function keysOn(
  cluster: RedisCluster,
  { source, slot }: Migration,
  keyPrefix: string,
  count: number,
): Promise<string[]> {
  const topology = await cluster.topology();
  const ranges = topology.find((node) => node.port === source.port)!.slots;
  const found: string[] = [];
  for (let i = 0; found.length < count && i < 10_000; i++) {
    const candidate = `filler:${i}`;
    const at = keySlot(keyPrefix + candidate);
    if (at !== slot && ranges.some(([from, to]) => from <= at && at <= to)) found.push(candidate);
  }
  return found;
}

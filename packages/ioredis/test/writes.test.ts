/**
 * ioredis writes each command to its socket on its own, one system call each; the store corks a
 * `Redis` client's socket for the rest of a tick in which it sends, so that the tick's commands
 * leave in batches (a quarter of the tick before's, at least two) rather than one by one.
 * Checked on the socket's public state: corked while a batch is buffered, uncorked once it is
 * sent, and never left corked.
 */

import { type EventEmitter, once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { createGate } from '@hookgate/core';
import {
  deadPort,
  type RedisCluster,
  type RedisServer,
  startCluster,
  startRedis,
} from '@hookgate/redis-harness';
import * as ioredis5 from 'ioredis5';
import * as ioredis6 from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoRedisStore } from '../src/index.js';
import { redis } from './clients.js';

let server: RedisServer;
let cluster: RedisCluster;
beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedis(), startCluster({ masters: 3 })]);
});
afterAll(async () => {
  await Promise.all([server?.dispose(), cluster?.dispose()]);
});

const socketOf = (client: unknown) => (client as { stream?: Socket }).stream;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

for (const major of [5, 6] as const) {
  describe(`ioredis ${major}`, () => {
    it('the commands of a tick after its first wait in the corked socket and leave in batches', async () => {
      const client = redis(major, server.port);
      try {
        await client.ping();
        const socket = socketOf(client)!;
        const store = new IoRedisStore(client);
        const run = crypto.randomUUID();
        /** `n` claims sent in this tick, each command of the same length. */
        const burst = (tag: string, n: number) =>
          Array.from({ length: n }, (_, i) =>
            store.claim(
              `writes:${run}:${tag}:${String(i).padStart(2, '0')}`,
              `${1e15 + i}`,
              60_000,
            ),
          );
        // A first tick has no tick before it: batches of two. The first SET went out at once;
        // 38 left in pairs; the 40th is buffered, not yet handed to the operating system.
        // bytesWritten counts the buffered bytes too.
        let before = socket.bytesWritten;
        const first = burst('a', 40);
        const size = (socket.bytesWritten - before) / 40;
        expect(socket.writableCorked).toBe(1);
        expect(socket.writableLength).toBe(size);
        expect(await Promise.all(first)).toEqual(Array(40).fill('acquired'));
        expect(socket.writableCorked).toBe(0);
        expect(socket.writableLength).toBe(0);

        // The next tick's batches are a quarter of the 40 commands the tick before sent: the
        // first at once, 30 in three batches of 10, the last 9 held to the end of the tick.
        before = socket.bytesWritten;
        const second = burst('b', 40);
        expect(socket.bytesWritten - before).toBe(size * 40);
        expect(socket.writableCorked).toBe(1);
        expect(socket.writableLength).toBe(size * 9);
        expect(await Promise.all(second)).toEqual(Array(40).fill('acquired'));
        expect(socket.writableCorked).toBe(0);
        expect(socket.writableLength).toBe(0);

        // A command of the application's own, outside the store, is not held.
        const own = client.set(`writes:${run}:own`, 'x');
        expect(socket.writableCorked).toBe(0);
        await own;

        // A command alone in its tick (one delivery at a time) is not held either.
        await nextTurn();
        const alone = store.claim(`writes:${run}:alone`, `${2e15}`, 60_000);
        expect(socket.writableCorked).toBe(0);
        expect(socket.writableLength).toBe(0);
        expect(await alone).toBe('acquired');
      } finally {
        client.disconnect();
      }
    });

    it('a burst of deliveries through the gate: every one processed once, the socket left uncorked', async () => {
      const client = redis(major, server.port);
      try {
        await client.ping();
        const gate = createGate({ store: new IoRedisStore(client), eventId: 'id' });
        const run = crypto.randomUUID();
        const ids = Array.from({ length: 400 }, (_, i) => `${run}-${i % 200}`);
        let ran = 0;
        const outcomes = await Promise.all(
          ids.map((id) =>
            gate.run({ payload: { id } }, () => {
              ran++;
            }),
          ),
        );
        expect(ran).toBe(200);
        expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(200);
        expect(outcomes.filter((o) => o.status !== 'processed').map((o) => o.status)).toEqual(
          expect.arrayContaining(['in-flight']),
        );
        await nextTurn();
        expect(socketOf(client)!.writableCorked).toBe(0);
      } finally {
        client.disconnect();
      }
    });

    it('over a Cluster, every node socket holds the commands of the tick and sends them together', async () => {
      const { Cluster } = major === 5 ? ioredis5 : ioredis6;
      const client = new Cluster(cluster.rootNodes);
      client.on('error', () => {});
      try {
        await client.ping();
        // Every master has a connection before the burst (a node connects on first use).
        await Promise.all(client.nodes('master').map((node) => node.ping()));
        const store = new IoRedisStore(client);
        const run = crypto.randomUUID();
        const claims = Array.from({ length: 48 }, (_, i) =>
          store.claim(`writes:${run}:${i}`, `${1e15 + i}`, 60_000),
        );
        const sockets = client
          .nodes('all')
          .filter((node) => node.status === 'ready')
          .map((node) => socketOf(node)!);
        expect(sockets.length).toBeGreaterThanOrEqual(3);
        // Corked from the tick's second command on.
        expect(sockets.map((socket) => socket.writableCorked)).toEqual(sockets.map(() => 1));
        expect(await Promise.all(claims)).toEqual(Array(48).fill('acquired'));
        expect(sockets.map((socket) => socket.writableCorked)).toEqual(sockets.map(() => 0));
      } finally {
        client.disconnect();
      }
    });

    it('a client that is not ready is left alone: its commands wait in the offline queue', async () => {
      const dead = await deadPort();
      const client = redis(major, dead.port);
      try {
        const store = new IoRedisStore(client, { timeoutMs: 200 });
        const claim = store.claim(`writes:${crypto.randomUUID()}`, '1000000000000000', 60_000);
        expect(socketOf(client)?.writableCorked ?? 0).toBe(0);
        await expect(claim).rejects.toMatchObject({ name: 'StoreUnavailableError' });
      } finally {
        client.disconnect();
        await dead.close();
      }
    });

    it('a burst to a connected client that is not ready leaves its socket uncorked: the commands wait in the offline queue', async () => {
      // A server that accepts the connection and never answers: the client has its socket but
      // stays in `connect`, waiting for the replies to its own connection commands.
      const accepted: Socket[] = [];
      const silent = createServer((socket) => void accepted.push(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as { port: number };
      const client = redis(major, port);
      try {
        await once(client as unknown as EventEmitter, 'connect');
        expect(client.status).toBe('connect');
        const socket = socketOf(client)!;
        expect(typeof socket.cork).toBe('function');
        const written = socket.bytesWritten;
        const store = new IoRedisStore(client, { timeoutMs: 200 });
        const run = crypto.randomUUID();
        // Ten claims in one tick: a ready client's socket would be corked from the second on.
        const claims = Array.from({ length: 10 }, (_, i) =>
          store.claim(`writes:${run}:${i}`, `${1e15 + i}`, 60_000),
        );
        expect(socket.writableCorked).toBe(0);
        // Queued, not written (ioredis's own connection commands may leave later in the test).
        expect(socket.bytesWritten).toBe(written);
        await nextTurn();
        expect(socket.writableCorked).toBe(0);
        for (const claim of claims) {
          await expect(claim).rejects.toMatchObject({ name: 'StoreUnavailableError' });
        }
        expect(socket.writableCorked).toBe(0);
      } finally {
        client.disconnect();
        for (const socket of accepted) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });
  });
}

/**
 * A done whose answer is lost on a real connection: a TCP proxy between the client and a
 * private Redis passes the done's `EVALSHA` to the server, waits for the server's reply (`:1`,
 * checked: the done was applied), and then closes the client's connection instead of passing
 * the reply on.
 * Each client recovers its own way (ioredis resends an unanswered command on its new
 * connection; node-redis rejects it, and the gate tries once more), and the event must end up
 * done exactly once: the handler ran once, a redelivery is a duplicate, and no lost lease is
 * reported (the store conformance suite simulates the same loss in the client, for every
 * store; this is the network doing it).
 */
import { randomUUID } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import {
  createGate,
  type DecisionEvent,
  LeaseLostError,
  StoreUnavailableError,
} from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { NodeRedisStore } from '@hookgate/node-redis';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Forwards to `target`; {@link loseNext} makes it drop the answers of the next `EVALSHA`s. */
class LosingProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #toLose = 0;
  /** The EVALSHA answers dropped so far, as the server sent them (`:1` for a done it applied). */
  readonly lost: string[] = [];

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(target: number): Promise<LosingProxy & { port: number }> {
    const server = createServer();
    const proxy = new LosingProxy(server);
    server.on('connection', (client) => proxy.#pipe(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return Object.assign(proxy, { port });
  }

  /** Drop the answers of the next `count` `EVALSHA` commands, closing the client's connection. */
  loseNext(count: number): void {
    this.#toLose = count;
  }

  #pipe(client: Socket, target: number): void {
    const upstream = connect(target, '127.0.0.1');
    this.#sockets.add(client).add(upstream);
    let losing = false;
    let answers = '';
    client.on('data', (chunk) => {
      // One delivery at a time: the EVALSHA is the last command of its chunk (a reconnected
      // node-redis sends its handshake in the same chunk, before the queued command).
      if (this.#toLose > 0 && /evalsha/i.test(chunk.toString('latin1'))) {
        this.#toLose--;
        losing = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!losing) {
        client.write(chunk);
        return;
      }
      // Until the EVALSHA's own answer, the last one, has come: the server ran the command.
      answers += chunk.toString('latin1');
      if (!/(^|\r\n)(:-?\d+|-[^\r\n]*)\r\n$/.test(answers)) return;
      // The answer goes nowhere.
      const last = answers.lastIndexOf('\r\n', answers.length - 3);
      this.lost.push(answers.slice(last < 0 ? 0 : last + 2));
      client.destroy();
      upstream.destroy();
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

let redis: RedisServer;
let proxy: LosingProxy & { port: number };
const closing: Array<() => unknown> = [];

beforeAll(async () => {
  redis = await startRedis();
  proxy = await LosingProxy.start(redis.port);
});

afterAll(async () => {
  for (const close of closing) await close();
  await proxy?.stop();
  await redis?.dispose();
});

// Far above the few ms a reconnect takes here, so that no deadline decides an outcome.
const TIMEOUT_MS = 5000;

async function ioredisStore() {
  const client = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
  client.on('error', () => {});
  closing.push(() => client.disconnect());
  await client.ping();
  return new IoRedisStore(client, { timeoutMs: TIMEOUT_MS });
}

async function nodeRedisStore() {
  const client = createClient({
    socket: { host: '127.0.0.1', port: proxy.port, reconnectStrategy: () => 20 },
  });
  client.on('error', () => {});
  closing.push(() => client.destroy());
  await client.connect();
  return new NodeRedisStore(client, { timeoutMs: TIMEOUT_MS });
}

/** Poll until `check` passes or `ms` pass. */
async function eventually(check: () => Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe('a done applied by Redis whose answer the connection lost', () => {
  it.each([
    // ioredis resends the unanswered EVALSHA once reconnected: done is idempotent for its
    // owner, so the done resolves, however many answers are lost before one arrives.
    { client: 'ioredis', lose: 1, doneRejects: false },
    { client: 'ioredis', lose: 2, doneRejects: false },
    // node-redis rejects it; the gate's second attempt, on the new connection, lands.
    { client: 'node-redis', lose: 1, doneRejects: false },
    // Both attempts lose their answers: done() rejects (StoreUnavailableError), and the
    // handler's catch calls fail(), whose release finds this claim's own done record.
    { client: 'node-redis', lose: 2, doneRejects: true },
  ])(
    '$client, $lose answer(s) lost: done once, a redelivery is a duplicate, no lost lease',
    async ({ client, lose, doneRejects }) => {
      const store = client === 'ioredis' ? await ioredisStore() : await nodeRedisStore();
      const decisions: DecisionEvent[] = [];
      const gate = createGate({
        store,
        eventId: 'id',
        namespace: `lost-${randomUUID().slice(0, 8)}`,
        onDecision: (event) => decisions.push(event),
      });
      // One delivery first, so that the done script is cached on the server: the answer lost
      // below is then the script's own (`:1`), not a NOSCRIPT error for a done never applied.
      await gate.run({ payload: { id: `evt_${randomUUID()}` } }, () => {});
      const delivery = { payload: { id: `evt_${randomUUID()}` } };
      let runs = 0;
      const lostBefore = proxy.lost.length;

      // What a binding does: claim, run the handler, done on success, fail() if done threw.
      const claim = await gate.claim(delivery);
      expect(claim.acquired).toBe(true);
      runs++;
      proxy.loseNext(lose);
      const done = await claim.done().then(
        () => undefined,
        (error: unknown) => error,
      );
      if (doneRejects) {
        expect(done).toBeInstanceOf(StoreUnavailableError);
        // The pattern the docs show: a failed done, then fail() in the handler's catch.
        await expect(claim.fail(done)).resolves.toBeUndefined();
      } else {
        expect(done).toBeUndefined();
      }
      // Each lost answer was the done script's "applied" (1).
      expect(proxy.lost.slice(lostBefore)).toEqual(Array(lose).fill(':1\r\n'));

      // The event is done (a background retry, if any, has nothing left to change).
      expect(await eventually(async () => (await gate.inspect(delivery)).state === 'done')).toBe(
        true,
      );
      const again = await gate.run(delivery, () => {
        runs++;
      });
      expect(again.status).toBe('duplicate');
      expect(runs).toBe(1);
      const names = decisions.map((d) => d.decision);
      expect(names).not.toContain('lease-lost');
      expect(names.filter((n) => n === 'done')).toHaveLength(2); // the first delivery's too
      expect(decisions.some((d) => d.error instanceof LeaseLostError)).toBe(false);
    },
  );
});

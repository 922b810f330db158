/**
 * A COMMIT whose outcome the client never learns: its reply lost with the connection (the
 * transaction committed), or the COMMIT itself lost (it rolled back). A proxy between the pool
 * and the shared server loses one or the other on demand.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import {
  createGate,
  type DecisionEvent,
  type GateOptions,
  StoreUnavailableError,
  type WebhookEvent,
} from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PgPoolClient, PostgresLedger, PostgresStore } from '../src/index.js';
import { drop, pool, SHARED, uniqueTable } from './db.js';

/** The simple-protocol message `pg` sends for `client.query('COMMIT')`. */
const COMMIT = Buffer.concat([Buffer.from([0x51, 0, 0, 0, 11]), Buffer.from('COMMIT\0')]);

type Loss = 'reply' | 'request';

/**
 * A TCP proxy to the shared server. Once armed, it makes the next COMMIT's outcome unknown to
 * its client: `reply` forwards the COMMIT, waits for the server's answer (so the commit is
 * done) and drops it with the connection; `request` drops the COMMIT with the connection, and
 * the server, its client gone mid-transaction, rolls back.
 */
async function commitProxy() {
  let armed: Loss | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(SHARED.port, SHARED.host);
    sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    let dropReply = false;
    client.on('data', (chunk) => {
      if (armed !== undefined && chunk.includes(COMMIT)) {
        const loss = armed;
        armed = undefined;
        if (loss === 'request') return cut();
        dropReply = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => (dropReply ? cut() : client.write(chunk)));
    for (const socket of [client, upstream]) {
      socket.on('close', cut);
      socket.on('error', () => {});
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    lose(loss: Loss) {
      armed = loss;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const admin = pool({ max: 2 });
const table = uniqueTable();
const ledgerTable = uniqueTable('hookgate_ledger');
const effects = uniqueTable('hookgate_effects');
let proxy: Awaited<ReturnType<typeof commitProxy>>;
let proxied: pg.Pool;

beforeAll(async () => {
  await new PostgresStore(admin, { table }).setup();
  await new PostgresLedger(admin, { table: ledgerTable }).setup();
  await admin.query(`CREATE TABLE "${effects}" (event_key text NOT NULL, label text NOT NULL)`);
  proxy = await commitProxy();
  proxied = pool({ port: proxy.port, max: 4 });
});
afterAll(async () => {
  await proxied.end();
  await proxy.close();
  await drop(admin, table, ledgerTable, effects);
  await admin.end();
});

async function effectRows(key: string): Promise<string[]> {
  const { rows } = await admin.query(`SELECT label FROM "${effects}" WHERE event_key = $1`, [key]);
  return rows.map((row) => row.label as string);
}

/** A transaction's handler that writes one effect row, labelled `label`, then arms `loss`. */
const effect =
  (label: string, loss?: Loss) => async (event: WebhookEvent, client: PgPoolClient) => {
    await client.query(`INSERT INTO "${effects}" VALUES ($1, '${label}')`, [event.lease!.key]);
    if (loss !== undefined) proxy.lose(loss);
  };

/** A gate in a namespace of its own, recording every decision. */
function recordingGate(options: Omit<GateOptions, 'onDecision'>) {
  const decisions: DecisionEvent[] = [];
  const namespace = `commit-${randomUUID()}`;
  const gate = createGate({
    eventId: 'id',
    namespace,
    ...options,
    onDecision: (d) => decisions.push(d),
  });
  return { gate, decisions, key: `${namespace}:evt:evt_1` };
}

describe('store.transaction when the COMMIT or its reply is lost', () => {
  it('finds that the commit happened: the event is processed, once, and no lease is said lost', async () => {
    const store = new PostgresStore(proxied, { table });
    const { gate, decisions, key } = recordingGate({ store });
    const delivery = { payload: { id: 'evt_1' } };
    const outcome = await gate.run(delivery, store.transaction(effect('once', 'reply')));
    expect(outcome.status).toBe('processed');
    expect(await effectRows(key)).toEqual(['once']);
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'done']);
    expect((await store.inspect(key)).kind).toBe('done');
    expect((await gate.run(delivery, () => 'again')).status).toBe('duplicate');
  });

  it('finds that the commit did not happen: a store error, the claim released, and the retry runs', async () => {
    const store = new PostgresStore(proxied, { table });
    const { gate, decisions, key } = recordingGate({ store });
    const delivery = { payload: { id: 'evt_1' } };
    const lost = gate.run(delivery, store.transaction(effect('lost', 'request')));
    await expect(lost).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(lost).rejects.toThrow(/commit/);
    expect(await effectRows(key)).toEqual([]);
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'released']);
    const retried = await gate.run(delivery, store.transaction(effect('retry')));
    expect(retried.status).toBe('processed');
    expect(await effectRows(key)).toEqual(['retry']);
  });
});

describe('PostgresLedger.transaction when the COMMIT or its reply is lost', () => {
  it('finds the event recorded: processed once, and the redelivery is a duplicate', async () => {
    const ledger = new PostgresLedger(proxied, { table: ledgerTable });
    const { gate, decisions, key } = recordingGate({ store: new MemoryStore() });
    const delivery = { payload: { id: 'evt_1' } };
    const outcome = await gate.run(delivery, ledger.transaction(effect('once', 'reply')));
    expect(outcome.status).toBe('processed');
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'done']);
    expect(await effectRows(key)).toEqual(['once']);
    expect((await gate.run(delivery, () => 'again')).status).toBe('duplicate');
  });

  it('finds the event not recorded: a store error, the claim released, and the retry runs', async () => {
    const ledger = new PostgresLedger(proxied, { table: ledgerTable });
    const { gate, decisions, key } = recordingGate({ store: new MemoryStore() });
    const delivery = { payload: { id: 'evt_1' } };
    const lost = gate.run(delivery, ledger.transaction(effect('lost', 'request')));
    await expect(lost).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(lost).rejects.toThrow(/commit/);
    expect(await effectRows(key)).toEqual([]);
    const recorded = await admin.query(`SELECT 1 FROM "${ledgerTable}" WHERE key = $1`, [key]);
    expect(recorded.rows).toEqual([]);
    expect(decisions.map((d) => d.decision)).toEqual(['new', 'released']);
    const retried = await gate.run(delivery, ledger.transaction(effect('retry')));
    expect(retried.status).toBe('processed');
    expect(await effectRows(key)).toEqual(['retry']);
    expect((await gate.run(delivery, () => 'again')).status).toBe('duplicate');
  });
});

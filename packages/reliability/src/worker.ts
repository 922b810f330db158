/**
 * One worker process: its own store client, its own pg pool, the receiver on a loopback
 * port. Configured by environment; prints `{"port":…,"pid":…}` on stdout once listening.
 *
 *   HOOKGATE_REDIS        redis://127.0.0.1:<port>, or
 *   HOOKGATE_CLUSTER      127.0.0.1:<port>,127.0.0.1:<port>,… (startup nodes of a cluster), or
 *   HOOKGATE_POSTGRES     postgres://…, with HOOKGATE_STORE_TABLE: a PostgresStore there
 *   HOOKGATE_CLIENT       ioredis (default), ioredis-pipelined (enableAutoPipelining) or node-redis
 *   HOOKGATE_TABLE        the table handler runs are recorded in
 *   HOOKGATE_NAMESPACE    the gate's namespace
 *   HOOKGATE_SECRET       the signature secret
 *   HOOKGATE_CLAIM_TTL_MS, HOOKGATE_TIMEOUT_MS, HOOKGATE_HEARTBEAT=1, HOOKGATE_SEQUENCE=1
 *   HOOKGATE_NAIVE=1      no gate at all: the control experiment
 *   HOOKGATE_WORKER       a name recorded with every run
 */
import type { AddressInfo } from 'node:net';
import type { ClaimStore } from '@hookgate/core';
import { IoRedisStore } from '@hookgate/ioredis';
import { NodeRedisStore } from '@hookgate/node-redis';
import { PostgresStore } from '@hookgate/pg';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { createClient, createCluster } from 'redis';
import { createReceiver } from './receiver.js';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`worker: ${name} is not set`);
  return value;
};

const timeoutMs = Number(env('HOOKGATE_TIMEOUT_MS', '500'));
const clusterNodes = process.env['HOOKGATE_CLUSTER'];
const postgres = process.env['HOOKGATE_POSTGRES'];
/** The store's client: its error events are counted (and must never end the process). */
let client: { on(event: 'error', listener: () => void): unknown };
let store: ClaimStore;
/** node-redis connects explicitly (once its error listener is on). */
let connecting: (() => Promise<unknown>) | undefined;
if (postgres) {
  const storePool = new pg.Pool({ connectionString: postgres, max: 8 });
  // A terminated or restarted server: pg can emit 'error' on a pooled connection outside any
  // query; the adapter's docs ask for this listener on every connection.
  storePool.on('connect', (connection) => connection.on('error', () => {}));
  client = storePool;
  store = new PostgresStore(storePool, { table: env('HOOKGATE_STORE_TABLE'), timeoutMs });
} else if (process.env['HOOKGATE_CLIENT'] === 'node-redis') {
  const options = { socket: { reconnectStrategy: () => 100 } };
  const redis = clusterNodes
    ? createCluster({
        rootNodes: clusterNodes.split(',').map((node) => ({ url: `redis://${node}` })),
        defaults: options,
      })
    : createClient({ url: env('HOOKGATE_REDIS'), ...options });
  client = redis;
  connecting = () => redis.connect();
  store = new NodeRedisStore(redis, { timeoutMs });
} else {
  const pipelined = process.env['HOOKGATE_CLIENT'] === 'ioredis-pipelined';
  const redis = clusterNodes
    ? new Cluster(
        clusterNodes.split(',').map((node) => {
          const [host, port] = node.split(':');
          return { host: host!, port: Number(port) };
        }),
        { enableAutoPipelining: pipelined },
      )
    : new Redis(env('HOOKGATE_REDIS'), { enableAutoPipelining: pipelined });
  client = redis;
  store = new IoRedisStore(redis, { timeoutMs });
}

const pool = new pg.Pool({
  host: '127.0.0.1',
  port: 5432,
  user: 'postgres',
  database: 'test',
  max: 4,
});

const { app, stats } = createReceiver({
  store,
  db: pool,
  table: env('HOOKGATE_TABLE'),
  worker: env('HOOKGATE_WORKER', String(process.pid)),
  namespace: env('HOOKGATE_NAMESPACE'),
  secret: env('HOOKGATE_SECRET'),
  claimTtlMs: Number(env('HOOKGATE_CLAIM_TTL_MS', '3000')),
  heartbeat: process.env['HOOKGATE_HEARTBEAT'] === '1',
  sequence: process.env['HOOKGATE_SEQUENCE'] === '1',
  naive: process.env['HOOKGATE_NAIVE'] === '1',
});

// The tests fail on any of these; the worker keeps running so that they can ask.
process.on('unhandledRejection', (reason) => {
  stats.unhandledRejections++;
  console.error('unhandledRejection', reason);
});
client.on('error', () => {
  stats.redisErrors++;
});
await connecting?.();
pool.on('error', () => {});

const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ port, pid: process.pid }));
});

// The test process holds our stdin: when it goes away, so do we (no orphan workers).
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));

/**
 * The webhook receiver under test: the real Express binding over a store (an `IoRedisStore`
 * or a `PostgresStore`), whose handler records every run in PostgreSQL. The worker processes
 * run it, and the hostile-input tests run it in process.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  type ClaimStore,
  createGate,
  type Decision,
  type DecisionEvent,
  providers,
} from '@hookgate/core';
import { hookgate, type WebhookRequest } from '@hookgate/express';
import express, { type Express } from 'express';

/** The events the provider sends (the grant-portal shape). */
export interface GrantEvent {
  id: string;
  grant_id: string;
  occurred_at: string | number;
}

/** The part of a pg `Pool` or `Client` the handler uses. */
export interface Db {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/** What a receiver saw, for `GET /stats`. */
export interface ReceiverStats {
  decisions: Partial<Record<Decision, number>>;
  /** Keys whose claim was found lost on `done`, `release` or `extend`. */
  leaseLost: string[];
  /** Unhandled promise rejections in the process (the worker counts them). */
  unhandledRejections: number;
  /** Error events of the store's client (Redis or PostgreSQL). */
  redisErrors: number;
}

export interface ReceiverOptions {
  store: ClaimStore;
  db: Db;
  /** The table every handler run is inserted into (no unique constraint: doubles show). */
  table: string;
  worker: string;
  namespace: string;
  secret: string;
  claimTtlMs: number;
  heartbeat?: boolean;
  sequence?: boolean;
  /**
   * The control experiment: no gate at all, every delivery runs the handler (the storm must
   * then find doubles, which shows that its check can fail).
   */
  naive?: boolean;
}

/** `x-signature`: hex HMAC-SHA256 of the exact body bytes. */
export function sign(secret: string, body: Uint8Array | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

const TABLE = /^[a-z_][a-z0-9_]{0,62}$/;

export function checkTable(table: string): string {
  if (!TABLE.test(table)) throw new Error(`not a safe table name: ${JSON.stringify(table)}`);
  return table;
}

/** The table the handler writes to: one per run, no unique constraint. */
export function createTableSql(table: string): string {
  return `CREATE TABLE ${checkTable(table)} (
    run_id bigserial PRIMARY KEY,
    event_key text NOT NULL,
    worker text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
  )`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createReceiver(options: ReceiverOptions): { app: Express; stats: ReceiverStats } {
  const { db, worker, secret } = options;
  const table = checkTable(options.table);
  const stats: ReceiverStats = {
    decisions: {},
    leaseLost: [],
    unhandledRejections: 0,
    redisErrors: 0,
  };
  const onDecision = (event: DecisionEvent) => {
    stats.decisions[event.decision] = (stats.decisions[event.decision] ?? 0) + 1;
    if (event.decision === 'lease-lost' && event.key !== undefined) stats.leaseLost.push(event.key);
  };
  const gate = createGate<GrantEvent>({
    store: options.store,
    provider: providers.grantPortal,
    namespace: options.namespace,
    digestFallback: false,
    claimTtlMs: options.claimTtlMs,
    heartbeat: options.heartbeat ?? false,
    sequence: options.sequence ?? false,
    onDecision,
  });
  const verify = (body: Buffer, headers: IncomingHttpHeaders) => {
    const given = headers['x-signature'];
    if (typeof given !== 'string' || !/^[0-9a-f]{64}$/.test(given)) return false;
    return timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(sign(secret, body), 'hex'));
  };

  const app = express();
  const guard = options.naive
    ? express.json({ verify: (req, _res, buf) => Object.assign(req, { rawBody: buf }) })
    : hookgate({ gate, verify, retryAfter: 1 });
  app.post('/webhooks', guard, async (req, res) => {
    if (options.naive) {
      req.webhook = {
        key: `evt:${(req.body as GrantEvent).id}`,
        source: 'event-id',
        payload: req.body,
      };
    }
    const { webhook } = req as WebhookRequest<GrantEvent>;
    // Test controls ride in headers, so that every copy of an event has the same body.
    const hold = Number(req.headers['x-test-hold-ms']);
    if (Number.isFinite(hold) && hold > 0) await sleep(Math.min(hold, 60_000));
    if (req.headers['x-test-fail'] === '1') {
      res.status(500).json({ status: 'failed' });
      return;
    }
    await db.query(`INSERT INTO ${table} (event_key, worker) VALUES ($1, $2)`, [
      webhook.key,
      worker,
    ]);
    res.status(200).json({ status: 'processed' });
  });
  app.get('/stats', (_req, res) => {
    res.json(stats);
  });
  return { app, stats };
}

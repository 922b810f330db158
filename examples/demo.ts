/**
 * `pnpm demo`: a real HTTP webhook receiver behind a hookgate, and a provider that storms it
 * with redeliveries, concurrent duplicates, an out-of-order event, a failing handler and a
 * delivery without an id. It prints every decision, then checks that each event was applied
 * exactly once (or dropped as stale), and exits non-zero if not.
 *
 * Runs on the in-memory store; set REDIS_URL (e.g. redis://127.0.0.1:6379) to run on Redis.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type ClaimStore,
  createGate,
  type DecisionEvent,
  InvalidDeliveryError,
  providers,
  StoreUnavailableError,
} from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';

interface GrantEvent {
  id?: string;
  grant_id: string;
  occurred_at: string;
  status: string;
}

// ---------------------------------------------------------------- the receiver

/** What the "database" saw: how often each event was applied, and each grant's state. */
const appliedCount = new Map<string, number>();
const grantState = new Map<string, string>();
const failOnce = new Set(['evt-5']);

const { store, storeName, close } = await openStore();
const gate = createGate<GrantEvent>({
  store,
  provider: providers.grantPortal,
  namespace: `demo-${randomUUID().slice(0, 8)}`,
  // Short-lived records, so a run against your Redis leaves nothing behind for long.
  doneTtlMs: 10 * 60_000,
  sequence: { ttlMs: 10 * 60_000 },
  onDecision: printDecision,
});

async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const outcome = await gate.run(
      { rawBody: Buffer.concat(chunks), headers: req.headers },
      async (event) => {
        await sleep(15); // the work takes a while, so concurrent duplicates overlap it
        if (event.payload.id !== undefined && failOnce.delete(event.payload.id)) {
          throw new Error('database hiccup');
        }
        appliedCount.set(event.key, (appliedCount.get(event.key) ?? 0) + 1);
        grantState.set(event.payload.grant_id, event.payload.status);
      },
    );
    if (outcome.status === 'in-flight') answer(res, 409, outcome.status, { 'retry-after': '1' });
    else answer(res, 200, outcome.status);
  } catch (error) {
    if (error instanceof InvalidDeliveryError) answer(res, 400, error.reason);
    else if (error instanceof StoreUnavailableError)
      answer(res, 503, 'store-unavailable', { 'retry-after': '1' });
    else answer(res, 500, 'handler-failed');
  }
}

function answer(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body);
}

// ---------------------------------------------------------------- the provider

const t = (seconds: number) => new Date(Date.UTC(2026, 10, 1, 9, 0, seconds)).toISOString();
const events: Record<string, GrantEvent> = {
  'evt-1': { id: 'evt-1', grant_id: 'g-1', occurred_at: t(0), status: 'submitted' },
  'evt-2': { id: 'evt-2', grant_id: 'g-1', occurred_at: t(10), status: 'approved' },
  'evt-3': { id: 'evt-3', grant_id: 'g-2', occurred_at: t(5), status: 'submitted' },
  'evt-4': { id: 'evt-4', grant_id: 'g-2', occurred_at: t(20), status: 'approved' },
  'evt-5': { id: 'evt-5', grant_id: 'g-3', occurred_at: t(30), status: 'disbursed' },
  legacy: { grant_id: 'g-4', occurred_at: t(40), status: 'closed' },
};

/** Deliver like a provider: retry on any non-2xx with a short backoff, up to 8 attempts. */
async function deliver(url: string, body: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let attempt = 0; attempt < 8; attempt++) {
    const res = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    await res.arrayBuffer();
    statuses.push(res.status);
    if (res.ok) break;
    await sleep(40 * (attempt + 1));
  }
  return statuses;
}

async function storm(url: string): Promise<Map<string, number[][]>> {
  const answers = new Map<string, number[][]>();
  const send = async (name: string, body = JSON.stringify(events[name])) => {
    const statuses = await deliver(url, body);
    answers.set(name, [...(answers.get(name) ?? []), statuses]);
  };
  step('evt-1 delivered, then redelivered twice');
  for (let i = 0; i < 3; i++) await send('evt-1');
  step('evt-2 delivered five times at once');
  await Promise.all(Array.from({ length: 5 }, () => send('evt-2')));
  step('evt-4 (newer) arrives before evt-3 (older) about the same grant');
  await send('evt-4');
  await send('evt-3');
  step('evt-5: the handler fails on the first attempt, the provider retries');
  await send('evt-5');
  await send('evt-5');
  step('a legacy delivery without an id, redelivered re-serialized');
  await send('legacy');
  const { status, occurred_at, grant_id } = events.legacy!;
  await send(
    'legacy',
    `{ "status": "${status}", "occurred_at": "${occurred_at}", "grant_id": "${grant_id}" }`,
  );
  return answers;
}

// ---------------------------------------------------------------- run and check

const server = createServer((req, res) => void receive(req, res));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
console.log(`hookgate demo: receiver on ${url}, ${storeName}\n`);

let ok = false;
try {
  const answers = await storm(url);
  ok = summarize(answers);
} finally {
  server.close();
  await close();
}
process.exitCode = ok ? 0 : 1;

function summarize(answers: Map<string, number[][]>): boolean {
  console.log('\nsummary');
  const expectStale = new Set(['evt-3']);
  let allGood = true;
  const keys = [...appliedCount.keys()];
  for (const name of Object.keys(events)) {
    const key = name === 'legacy' ? keys.find((k) => k.startsWith('dig:')) : `evt:${name}`;
    const applied = key === undefined ? 0 : (appliedCount.get(key) ?? 0);
    const expected = expectStale.has(name) ? 0 : 1;
    const good = applied === expected;
    allGood &&= good;
    const deliveries = answers.get(name) ?? [];
    console.log(
      `  ${good ? 'ok ' : 'BAD'} ${name.padEnd(7)} deliveries ${String(deliveries.length).padStart(2)}` +
        `  answers ${deliveries
          .map((s) => s.join('→'))
          .join(' ')
          .padEnd(34)}` +
        `  applied ${applied}${expected === 0 ? ' (stale: older than its grant’s watermark)' : ''}`,
    );
  }
  console.log(`  grants: ${[...grantState].map(([g, s]) => `${g}=${s}`).join(', ')}`);
  const finalOk = grantState.get('g-2') === 'approved';
  console.log(
    allGood && finalOk
      ? '\nevery event applied exactly once; the stale one dropped; no grant moved backwards.'
      : '\nFAILED: some event was applied more or less than once.',
  );
  return allGood && finalOk;
}

function printDecision(d: DecisionEvent): void {
  const detail = d.reason ?? (d.error instanceof Error ? d.error.message : '');
  console.log(
    `  ${d.decision.padEnd(17)} ${d.key?.slice(0, 20).padEnd(20) ?? ''} ${d.subject ?? ''} ${detail}`,
  );
}

function step(text: string): void {
  console.log(`\n# ${text}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function openStore(): Promise<{
  store: ClaimStore;
  storeName: string;
  close: () => Promise<void>;
}> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl)
    return { store: new MemoryStore(), storeName: 'in-memory store', close: async () => {} };
  const { Redis } = await import('ioredis');
  const { IoRedisStore } = await import('@hookgate/ioredis');
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  return {
    store: new IoRedisStore(client),
    storeName: `Redis at ${redisUrl.replace(/\/\/[^@]*@/, '//')}`,
    close: async () => void (await client.quit()),
  };
}

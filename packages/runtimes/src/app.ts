/**
 * The app every runtime runs: `@hookgate/hono` over a `MemoryStore`, and a handler that counts
 * its runs per event key. Web-standard only: the tests bundle it with esbuild (no `node:`
 * import allowed) and serve it on workerd, Bun and Deno.
 */
import { createGate } from '@hookgate/core';
import { hookgate } from '@hookgate/hono';
import { MemoryStore } from '@hookgate/memory';
import { Hono } from 'hono';

/** What the tests post: an event id (or none, for a digest key) and how long to hold the claim. */
export interface TestEvent {
  id?: string;
  /** The handler waits this long before answering, so that concurrent duplicates find the event in flight. */
  holdMs?: number;
  [field: string]: unknown;
}

/** The answer of `GET /runs`. */
export interface Runs {
  /** How many times the handler ran, per event key. */
  runs: Record<string, number>;
  /** Whether core's SHA-256 can go native here (`process.getBuiltinModule('node:crypto')`). */
  nodeCrypto: boolean;
}

const gate = createGate<TestEvent>({ store: new MemoryStore(), eventId: 'id' });
const runs: Record<string, number> = {};

const builtin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  ?.getBuiltinModule;

const app = new Hono();

// No signature: only the test process reaches this app, on loopback.
app.post('/webhooks', hookgate({ gate, verify: false }), async (c) => {
  const { key, payload } = c.get('webhook');
  runs[key] = (runs[key] ?? 0) + 1;
  const holdMs = payload.holdMs ?? 0;
  if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
  return c.json({ status: 'handled', key });
});

app.get('/runs', (c) =>
  c.json({ runs, nodeCrypto: builtin?.('node:crypto') !== undefined } satisfies Runs),
);

export default app;

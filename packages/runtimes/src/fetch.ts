/**
 * The same app as `app.ts`, written with `@hookgate/fetch` instead of Hono: a module-worker
 * object whose `fetch` routes `POST /webhooks` to `webhookHandler()` over a `MemoryStore` and
 * `GET /runs` to the counts. Web-standard only, bundled and served like `app.ts`.
 */
import { createGate } from '@hookgate/core';
import { webhookHandler } from '@hookgate/fetch';
import { MemoryStore } from '@hookgate/memory';
import type { Runs, TestEvent } from './app.js';

const gate = createGate<TestEvent>({ store: new MemoryStore(), eventId: 'id' });
const runs: Record<string, number> = {};

const builtin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  ?.getBuiltinModule;

// No signature: only the test process reaches this app, on loopback.
const webhooks = webhookHandler({ gate, verify: false }, async ({ key, payload }) => {
  runs[key] = (runs[key] ?? 0) + 1;
  const holdMs = payload.holdMs ?? 0;
  if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
  return Response.json({ status: 'handled', key });
});

export default {
  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (request.method === 'POST' && pathname === '/webhooks') return webhooks(request);
    if (request.method === 'GET' && pathname === '/runs') {
      return Response.json({
        runs,
        nodeCrypto: builtin?.('node:crypto') !== undefined,
      } satisfies Runs);
    }
    return new Response('not found', { status: 404 });
  },
};

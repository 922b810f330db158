/**
 * A limit the docs state (express.md, Settling): Express gives no sign of when a handler is done
 * other than its answer, so a response deadline that answers 503 while the handler still runs
 * settles the claim then (released), and the provider's retry runs the handler beside the first.
 * Koa's binding waits for the handler in that case (koa.test.ts).
 */
import { createGate } from '@hookgate/core';
import { listen } from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import express4 from 'express4';
import express5 from 'express5';
import { expect, it, vi } from 'vitest';
import { hookgate } from '../src/index.js';

for (const [name, express] of [
  ['express 4', express4],
  ['express 5', express5],
] as const) {
  it(`${name}: a deadline's 503 while the handler runs releases the claim, and the retry runs beside the first`, async () => {
    const decisions: string[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      onDecision: (event) => decisions.push(event.decision),
    });
    let running = 0;
    let most = 0;
    let finish!: () => void;
    const working = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const app = (express as typeof express5)();
    let late!: () => void;
    // What connect-timeout or a hand-written response deadline does, called by `late()`.
    app.use((_req, res, next) => {
      late = () => {
        if (!res.headersSent) res.status(503).json({ status: 'timeout' });
      };
      next();
    });
    app.post('/webhook', hookgate({ gate, verify: false }), async (_req, res) => {
      running++;
      most = Math.max(most, running);
      await working;
      running--;
      if (!res.headersSent) res.status(200).json({ ok: true });
    });
    const server = await listen(app);
    const post = () =>
      fetch(`${server.url}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"id":"evt_1"}',
      });
    try {
      const first = post();
      await vi.waitFor(() => expect(running).toBe(1));
      late();
      expect((await first).status).toBe(503);
      await vi.waitFor(() => expect(decisions).toEqual(['new', 'released']));
      const retry = post();
      await vi.waitFor(() => expect(running).toBe(2));
      finish();
      expect((await retry).status).toBe(200);
      expect(most).toBe(2);
    } finally {
      await server.close();
    }
  });
}

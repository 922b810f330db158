import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createGate } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import express4 from 'express4';
import { describe, expect, it, vi } from 'vitest';
import { hookgate } from '../src/index.js';

// What docs/options.md ("Express 4 safety") says about a rejected async handler behind
// hookgate() on Express 4, over real HTTP.

/**
 * Sends the same event to `port` and resolves the status, or `'timed out'` when no answer came
 * within 500 ms; any other failure (the process gone) rejects.
 */
async function post(port: number): Promise<number | 'timed out'> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"id":"evt_1"}',
      signal: AbortSignal.timeout(500),
    });
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') return 'timed out';
    throw error;
  }
}

describe('express 4: an async handler that rejects, in a process with an unhandledRejection listener', () => {
  const fixture = fileURLToPath(new URL('./fixtures/unhandled-listener.mjs', import.meta.url));
  // The workspace packages from their sources, as every test takes them.
  const node = ['--conditions=@hookgate/source', '--import', 'tsx', fixture];

  it('lives on, leaves the request unanswered and the claim to expire after claimTtlMs', async () => {
    const child = spawn(process.execPath, node, { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
    const decisions = () => lines.flatMap((line) => ('decision' in line ? [line.decision] : []));
    try {
      const port = await vi.waitFor(
        () => {
          const line = lines.find((line) => 'port' in line);
          if (line === undefined) throw new Error('the child has not listened yet');
          return line.port as number;
        },
        { timeout: 15_000 },
      );

      expect(await post(port)).toBe('timed out');
      // The listener caught the rejection; the response closed with the client, never answered.
      await vi.waitFor(() => {
        expect(lines).toContainEqual({ unhandled: 'handler failed' });
        expect(lines).toContainEqual({ closed: 1, answered: false });
      });
      expect(await post(port)).toBe(409); // the claim was never settled: it holds
      await vi.waitFor(() => expect(decisions()).toEqual(['new', 'in-flight']));

      // Once claimTtlMs (1500 ms) has passed, the claim has expired and a redelivery runs.
      await vi.waitFor(async () => expect(await post(port)).toBe(200), {
        timeout: 5_000,
        interval: 100,
      });
      // The child's lines come on a pipe of their own: they may trail the answer.
      await vi.waitFor(() => {
        expect(lines.filter((line) => 'run' in line)).toEqual([{ run: 1 }, { run: 2 }]);
        expect(decisions().filter((decision) => decision !== 'in-flight')).toEqual([
          'new',
          'new',
          'done',
        ]);
      });
      expect(child.exitCode).toBe(null);
      expect(child.signalCode).toBe(null);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill();
        await once(child, 'exit');
      }
    }
  });
});

/** Express 4: pass a rejected handler's error on to the error middleware. */
const safe =
  (handler: (req: Request, res: Response) => Promise<void>): RequestHandler =>
  (req, res, next: NextFunction) => {
    handler(req, res).catch(next);
  };

describe('express 4: an async handler that rejects, wrapped in safe()', () => {
  it("is answered by the error middleware's 500, which releases the claim: the retry runs", async () => {
    const decisions: string[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      eventId: 'id',
      onDecision: (event) => decisions.push(event.decision),
    });
    let runs = 0;
    const app = express4();
    app.post(
      '/webhook',
      hookgate({ gate, verify: false }),
      safe(async (_req, res) => {
        runs++;
        if (runs === 1) throw new Error('declined');
        res.sendStatus(204);
      }),
    );
    const errors: ErrorRequestHandler = (_error, _req, res, _next) => {
      res.status(500).json({ status: 'error' });
    };
    app.use(errors);
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      expect(await post(port)).toBe(500);
      await vi.waitFor(() => expect(decisions).toEqual(['new', 'released']));
      expect(await post(port)).toBe(204); // the provider's retry
      await vi.waitFor(() => expect(decisions).toEqual(['new', 'released', 'new', 'done']));
      expect(runs).toBe(2);
    } finally {
      server.close();
    }
  });
});

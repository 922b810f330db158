import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGate } from '@hookgate/core';
import {
  AFTER_ANSWER,
  BOM,
  httpBindingSuite,
  listen,
  NON_ASCII_JSON,
  onRedis,
  type ServerSetup,
  UNANSWERED,
} from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import express4 from 'express4';
import express5 from 'express5';
import { describe, expect, it, vi } from 'vitest';
import { hookgate, keepRawBody } from '../src/index.js';

function server(express: typeof express5) {
  return ({ options, handle, onError, bodyParser }: ServerSetup) => {
    const app = express();
    if (bodyParser === 'keep-raw') app.use(express.json({ verify: keepRawBody }));
    if (bodyParser === 'drop-raw') app.use(express.json());
    app.post('/webhook', hookgate(options), (req, res, next) => {
      // Express 4 does not catch a rejected handler: pass errors on by hand, as apps do.
      handle(req.webhook!).then((reply) => {
        if (reply === UNANSWERED) return next(); // on to Express's own 404
        if (reply.body === undefined) res.status(reply.status).end();
        else res.status(reply.status).json(reply.body);
        if (reply.afterAnswer === 'throw') next(AFTER_ANSWER);
      }, next);
    });
    // An ordinary error handler: it does not check res.headersSent.
    const errors: ErrorRequestHandler = (error, _req, res, _next) => {
      onError(error);
      res.status(500);
      if (!res.headersSent) res.json({ status: 'error' });
    };
    app.use(errors);
    return listen(app);
  };
}

httpBindingSuite('express 4', server(express4));
httpBindingSuite('express 5', server(express5));
httpBindingSuite('express 5 on ioredis', server(express5), { store: onRedis() });

/**
 * A bare app of `express` whose one route is `hookgate()` then `handler`, over a MemoryStore gate
 * with a claim TTL of `claimTtlMs`; `post()` sends the same event each time and resolves its
 * status, or `'cut off'` when the answer did not end.
 */
async function bareApp(express: typeof express5, handler: RequestHandler, claimTtlMs = 300_000) {
  const decisions: string[] = [];
  const gate = createGate({
    store: new MemoryStore(),
    eventId: 'id',
    claimTtlMs,
    onDecision: (event) => decisions.push(event.decision),
  });
  const app = express();
  app.set('env', 'test'); // Express's final handler logs the error otherwise
  app.post('/webhook', hookgate({ gate, verify: false }), handler);
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const post = () =>
    new Promise<number | 'cut off'>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/webhook', method: 'POST' }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode!));
        res.on('aborted', () => resolve('cut off'));
      });
      req.on('error', () => resolve('cut off'));
      req.setHeader('content-type', 'application/json');
      req.end('{"id":"evt_1"}');
    });
  return { decisions, post, close: () => server.close() };
}

describe.each([
  ['express 4', express4],
  ['express 5', express5],
] as const)('%s: a 2xx cut off by a failure after part of it went out', (_name, express) => {
  it('is not marked done: the claim expires, and the retry runs the handler again', async () => {
    let runs = 0;
    const app = await bareApp(
      express,
      (_req, res, next) => {
        runs++;
        res.status(200);
        res.write('partial');
        next(new Error('failed halfway')); // Express's final handler destroys the socket
      },
      500,
    );
    try {
      expect(await app.post()).toBe('cut off');
      expect(await app.post()).toBe(409); // the claim stands meanwhile
      expect(app.decisions).toEqual(['new', 'in-flight']);
      await vi.waitFor(async () => expect(await app.post()).toBe('cut off'), { timeout: 5_000 });
      expect(runs).toBe(2);
    } finally {
      app.close();
    }
  });
});

describe.each([
  ['express 4', express4],
  ['express 5', express5],
] as const)('%s: a status set after the headers went out, before the end', (_name, express) => {
  it('changes nothing: the status on the wire settles the claim', async () => {
    for (const [written, later, settled] of [
      [200, 500, 'done'],
      [500, 200, 'released'],
    ] as const) {
      const app = await bareApp(express, (_req, res) => {
        res.status(written);
        res.write('part'); // the headers leave with the first chunk
        res.status(later);
        res.end();
      });
      try {
        expect(await app.post()).toBe(written);
        await vi.waitFor(() => expect(app.decisions).toEqual(['new', settled]));
      } finally {
        app.close();
      }
    }
  });
});

describe('express 5: an async handler that rejects, not wrapped', () => {
  it('is answered 500 by Express, which releases the claim: the retry runs', async () => {
    let runs = 0;
    const app = await bareApp(express5, async (_req, res) => {
      runs++;
      if (runs === 1) throw new Error('declined');
      res.sendStatus(204);
    });
    try {
      expect(await app.post()).toBe(500);
      await vi.waitFor(() => expect(app.decisions).toEqual(['new', 'released']));
      expect(await app.post()).toBe(204);
      expect(runs).toBe(2);
    } finally {
      app.close();
    }
  });
});

/**
 * An app of `express` whose one route is `parser`, `hookgate()` with a verify that accepts only
 * the bytes sent, then a 204; `post(bytes)` sends `bytes` and resolves the status.
 */
async function parsedFirst(express: typeof express5, parser: RequestHandler) {
  const store = new MemoryStore();
  const decisions: string[] = [];
  const gate = createGate({
    store,
    eventId: 'id',
    onDecision: (event) => decisions.push(event.decision),
  });
  let sent: Buffer = Buffer.alloc(0);
  const verified: Buffer[] = [];
  let runs = 0;
  const app = express();
  app.post(
    '/webhook',
    parser,
    hookgate({
      gate,
      verify: (raw) => {
        verified.push(Buffer.from(raw));
        return raw.equals(sent); // what a signature over the bytes sent checks
      },
    }),
    (_req, res) => {
      runs++;
      res.sendStatus(204);
    },
  );
  const server = await listen(app);
  const post = async (bytes: Buffer) => {
    sent = bytes;
    const res = await fetch(`${server.url}/webhook`, {
      method: 'POST',
      body: new Uint8Array(bytes),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    await res.arrayBuffer();
    return res.status;
  };
  return { store, decisions, verified, runs: () => runs, post, close: server.close };
}

describe.each([
  ['express 4', express4],
  ['express 5', express5],
] as const)('%s: a parser that ran before hookgate()', (_name, express) => {
  it('express.raw(): verify gets the exact bytes sent, a leading BOM included', async () => {
    const app = await parsedFirst(express, express.raw({ type: '*/*' }));
    const withBom = Buffer.concat([BOM, NON_ASCII_JSON]);
    try {
      expect(await app.post(withBom)).toBe(204);
      expect(app.verified).toEqual([withBom]);
      expect(app.runs()).toBe(1);
      await vi.waitFor(() => expect(app.decisions).toEqual(['new', 'done']));
    } finally {
      await app.close();
    }
  });

  it('express.text(): a UTF-8 body without a BOM reaches verify byte-exact', async () => {
    const app = await parsedFirst(express, express.text({ type: '*/*' }));
    try {
      expect(await app.post(NON_ASCII_JSON)).toBe(204);
      expect(app.verified).toEqual([NON_ASCII_JSON]);
      expect(app.runs()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('express.text(): a BOM is dropped as it decodes, so a signature over the bytes sent fails (401, nothing claimed)', async () => {
    const app = await parsedFirst(express, express.text({ type: '*/*' }));
    try {
      expect(await app.post(Buffer.concat([BOM, NON_ASCII_JSON]))).toBe(401);
      expect(app.verified).toEqual([NON_ASCII_JSON]); // the bytes sent, less the BOM
      expect(app.runs()).toBe(0);
      expect(app.decisions).toEqual(['unverified']);
      expect(app.store.size).toBe(0);
    } finally {
      await app.close();
    }
  });
});

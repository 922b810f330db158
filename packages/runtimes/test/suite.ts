import { deriveKey } from '@hookgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runs, TestEvent } from '../src/app.js';
import { APPS, type Binding, type Bundle, bundleApp } from './bundle.js';

/** A response, as `fetch` and Miniflare's `dispatchFetch` both give it. */
export interface Answer {
  status: number;
  headers: { get(name: string): string | null };
  json(): Promise<unknown>;
}

/** The bundled app, served by one runtime. */
export interface Served {
  /** Sends a request to the app. */
  request(
    path: string,
    init?: { method: 'POST'; body: string; headers: Record<string, string> },
  ): Promise<Answer>;
  close(): Promise<void>;
  /** What the runtime printed, for a failure message. */
  output?(): string;
}

/** What one runtime is expected to do beyond the common behaviour. */
export interface Expected {
  /** Whether core hashes through `node:crypto` there (else the portable SHA-256 runs). */
  nodeCrypto: boolean;
}

/** Every request is bounded: a hung runtime fails the test instead of stalling the run. */
const REQUEST_MS = 5_000;
/** How long the first of the concurrent deliveries holds its claim. */
const HOLD_MS = 400;

/**
 * The behaviour every runtime must show: duplicates of one event run the handler once, through
 * each binding (`@hookgate/hono`, `@hookgate/fetch`) and `MemoryStore` bundled for a
 * worker-like platform. Each binding's app gets its own bundle and server.
 */
export function exactlyOnceOn(
  runtime: string,
  serve: (bundle: Bundle) => Promise<Served>,
  expected: Expected,
): void {
  for (const binding of Object.keys(APPS) as Binding[]) {
    exactlyOnceWith(binding, runtime, serve, expected);
  }
}

function exactlyOnceWith(
  binding: Binding,
  runtime: string,
  serve: (bundle: Bundle) => Promise<Served>,
  expected: Expected,
): void {
  describe(`@hookgate/${binding} over MemoryStore on ${runtime}`, () => {
    let bundle: Bundle | undefined;
    let served: Served | undefined;

    beforeAll(async () => {
      bundle = await bundleApp(binding);
      served = await serve(bundle);
    }, 30_000);

    afterAll(async () => {
      await served?.close();
      bundle?.remove();
    }, 15_000);

    const request = (path: string, init?: Parameters<Served['request']>[1]) =>
      within(REQUEST_MS, `${init?.method ?? 'GET'} ${path}`, async () => {
        const answer = await served!.request(path, init);
        return { status: answer.status, headers: answer.headers, body: await answer.json() };
      }).catch((error: unknown) => {
        // What the runtime printed says more than a refused connection.
        throw new Error(`${String(error)}\n${served?.output?.() ?? ''}`, { cause: error });
      });

    /** Posts an event (or raw JSON text): the status, the JSON body and `Retry-After`. */
    const post = async (event: TestEvent | string) => {
      const body = typeof event === 'string' ? event : JSON.stringify(event);
      const answer = await request('/webhooks', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      return {
        status: answer.status,
        body: answer.body as { status: string; key?: string },
        retryAfter: answer.headers.get('retry-after'),
      };
    };

    const runs = async () => (await request('/runs')).body as Runs;

    it('the bundle imports no node: module', () => {
      expect(bundle!.nodeImports).toEqual([]);
    });

    it(
      expected.nodeCrypto
        ? 'node:crypto is reachable through process.getBuiltinModule, so core hashes natively'
        : 'node:crypto is out of reach, so core hashes with the portable SHA-256',
      async () => {
        expect((await runs()).nodeCrypto).toBe(expected.nodeCrypto);
      },
    );

    it('five sequential deliveries of one event run the handler once; the other four are duplicates', async () => {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await post({ id: 'evt_sequential' }));
      expect(answers[0]).toEqual({
        status: 200,
        body: { status: 'handled', key: 'evt:evt_sequential' },
        retryAfter: null,
      });
      for (const answer of answers.slice(1)) {
        expect(answer).toEqual({ status: 200, body: { status: 'duplicate' }, retryAfter: null });
      }
      expect((await runs()).runs['evt:evt_sequential']).toBe(1);
    });

    it('ten concurrent deliveries of one event run the handler once; the others find it in flight (409) or done', async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => post({ id: 'evt_concurrent', holdMs: HOLD_MS })),
      );
      const handled = answers.filter((a) => a.body.status === 'handled');
      const inFlight = answers.filter((a) => a.body.status === 'in-flight');
      const duplicates = answers.filter((a) => a.body.status === 'duplicate');
      expect(handled).toEqual([
        { status: 200, body: { status: 'handled', key: 'evt:evt_concurrent' }, retryAfter: null },
      ]);
      for (const answer of inFlight)
        expect(answer).toMatchObject({ status: 409, retryAfter: '10' });
      for (const answer of duplicates) expect(answer.status).toBe(200);
      expect(inFlight.length + duplicates.length).toBe(9);
      // The handler held its claim for HOLD_MS: deliveries sent together meet it in flight.
      expect(inFlight.length).toBeGreaterThan(0);

      // Once done, a redelivery is a duplicate.
      expect(await post({ id: 'evt_concurrent' })).toMatchObject({
        status: 200,
        body: { status: 'duplicate' },
      });
      expect((await runs()).runs['evt:evt_concurrent']).toBe(1);
    });

    it('a second event id runs the handler once of its own', async () => {
      expect(await post({ id: 'evt_second' })).toMatchObject({
        status: 200,
        body: { status: 'handled', key: 'evt:evt_second' },
      });
      expect(await post({ id: 'evt_second' })).toMatchObject({ body: { status: 'duplicate' } });
      expect((await runs()).runs['evt:evt_second']).toBe(1);
    });

    it('a body with no id is keyed by the SHA-256 digest that Node derives; a re-serialized copy is a duplicate', async () => {
      // Non-ASCII text, nested objects and numbers: canonical JSON and UTF-8 must agree too.
      const payload = { type: 'note', data: { text: 'grüße ✓ 😀', n: 1.5e21, list: [3, 1, 2] } };
      const { key } = deriveKey({ payload }, { eventId: 'id' });
      expect(key).toMatch(/^dig:[0-9a-f]{64}$/);

      expect(await post(payload)).toEqual({
        status: 200,
        body: { status: 'handled', key },
        retryAfter: null,
      });
      const reordered = `{ "data": { "list": [3, 1, 2], "n": 1500000000000000000000, "text": "gr\\u00fc\\u00dfe \\u2713 \\ud83d\\ude00" }, "type": "note" }`;
      expect(JSON.parse(reordered)).toEqual(payload);
      expect(await post(reordered)).toMatchObject({ status: 200, body: { status: 'duplicate' } });
      expect((await runs()).runs[key]).toBe(1);
    });

    it('no event ran twice', async () => {
      const { runs: counts } = await runs();
      expect(Object.keys(counts).length).toBeGreaterThan(0);
      for (const [key, count] of Object.entries(counts)) expect(count, key).toBe(1);
    });
  });
}

async function within<T>(ms: number, what: string, run: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

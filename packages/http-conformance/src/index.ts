/**
 * The HTTP behaviour suite every hookgate framework binding passes through a real server: the
 * answer table, concurrency, settlement, the raw body. A binding proves itself in a few lines:
 *
 * ```ts
 * httpBindingSuite('express 5', ({ options, handle, onError }) => { ...; return listen(app); });
 * ```
 *
 * @packageDocumentation
 */
import type { ClaimStore } from '@hookgate/core';
import { afterEach, describe } from 'vitest';
import { answers } from './answers.js';
import { batch } from './batch.js';
import { body } from './body.js';
import { concurrency } from './concurrency.js';
import { Harness, type MakeServer, type Scenario } from './harness.js';
import { settlement } from './settlement.js';

export {
  AFTER_ANSWER,
  type BindingOptions,
  BOM,
  header,
  listen,
  type MakeServer,
  NON_ASCII_JSON,
  type Reply,
  type ServerSetup,
  sign,
  type TestServer,
  UNANSWERED,
} from './harness.js';
export { onRedis } from './redis.js';

/** How the suite reaches the binding. */
export interface SuiteOptions {
  /**
   * `false` when the server is an in-process app (`app.request`) with no socket: the tests that
   * need a client to disconnect are left out.
   * @default true
   */
  network?: boolean;
  /**
   * `true` for a framework whose own parser reads every body before the binding runs (NestJS
   * with `rawBody: true`): the tests of bodies that parser answers first (malformed JSON, a
   * streamed body of several documents, a client gone mid-body) are left out, and the
   * binding's tests must show what happens to them instead.
   * @default false
   */
  parsedBody?: boolean;
  /**
   * The store under each test's gate, made fresh per test (each test also gets its own
   * namespace, so one Redis can serve the whole file).
   * @default a new MemoryStore
   */
  store?: () => ClaimStore | Promise<ClaimStore>;
}

/** What each part of the suite is given. */
export interface SuiteContext {
  /** Start a fresh server, gate and store for one test; it is closed after the test. */
  start(scenario?: Scenario): Promise<Harness>;
  network: boolean;
  parsedBody: boolean;
  makeServer: MakeServer;
}

/** Register the whole suite for one binding, under `describe(name)`. */
export function httpBindingSuite(
  name: string,
  makeServer: MakeServer,
  options: SuiteOptions = {},
): void {
  describe(name, () => {
    const running: Harness[] = [];
    afterEach(async () => {
      await Promise.all(running.splice(0).map((harness) => harness.close()));
    });
    const context: SuiteContext = {
      async start(scenario) {
        const harness = await Harness.start(makeServer, scenario, await options.store?.());
        running.push(harness);
        return harness;
      },
      network: options.network ?? true,
      parsedBody: options.parsedBody ?? false,
      makeServer,
    };
    answers(context);
    batch(context);
    body(context);
    concurrency(context);
    settlement(context);
  });
}

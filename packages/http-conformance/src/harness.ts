import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type ClaimStore,
  createGate,
  type Decision,
  type DecisionEvent,
  type Gate,
  type GateOptions,
  type HeaderBag,
  type WebhookEvent,
} from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';

/** The options every binding's `hookgate()` takes, as the suite passes them. */
export interface BindingOptions {
  gate: Gate;
  verify: ((rawBody: Uint8Array, headers: HeaderBag) => boolean | Promise<boolean>) | false;
  inFlight?: 'retry' | 'ack';
  limit?: number;
  retryAfter?: number;
}

/** What the route handler behind the binding answers: a status and a JSON body. */
export interface Reply {
  status: number;
  body?: unknown;
  /**
   * `'throw'`: once the answer is on the wire (where the framework lets a handler write it
   * first), throw {@link AFTER_ANSWER} into the framework's error handling, whose handler then
   * sets status 500 without checking whether headers were sent, as ordinary ones do.
   */
  afterAnswer?: 'throw';
}

/** What the route handler does when it returns without answering at all. */
export const UNANSWERED = 'unanswered';

/** A UTF-8 byte-order mark, which a parser that decodes the body drops. */
export const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** A JSON body that is not ASCII only, so that a re-encoding other than UTF-8 would show. */
export const NON_ASCII_JSON = Buffer.from('{"id":"evt_1","name":"Zoë ✓"}');

/** The error an `afterAnswer: 'throw'` reply throws after its answer. */
export const AFTER_ANSWER = new Error('thrown after the answer was sent');

/** What the suite asks a server factory for. */
export interface ServerSetup {
  /** Pass these to the binding's `hookgate()` as they are (it may throw: let it). */
  options: BindingOptions;
  /**
   * The route handler behind the binding: call it with the binding's event and answer with its
   * reply as JSON. When it rejects, hand the error to the framework's own error handling.
   */
  handle(event: WebhookEvent): Promise<Reply | typeof UNANSWERED>;
  /** The framework's error handler calls this with every error, then answers 500. */
  onError(error: unknown): void;
  /**
   * Put a JSON body parser in front of the binding: `'keep-raw'`, set up as the binding's docs
   * say to keep the exact bytes; `'drop-raw'`, one that consumes the body and keeps nothing.
   */
  bodyParser?: 'keep-raw' | 'drop-raw';
}

/** A running server whose `POST /webhook` route is guarded by the binding. */
export interface TestServer {
  /** Base URL, e.g. `http://127.0.0.1:4567`. */
  url: string;
  /** Sends a request; defaults to the global `fetch` (an in-process app passes its own). */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  close(): Promise<void>;
}

/** Builds a server for one test. */
export type MakeServer = (setup: ServerSetup) => TestServer | Promise<TestServer>;

/** Serve a Node.js request listener on an ephemeral 127.0.0.1 port. */
export async function listen(listener: RequestListener): Promise<TestServer> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const SECRET = 'http-conformance-secret';

/** The test signature: HMAC-SHA256 of the exact body bytes, hex, in `x-signature`. */
export function sign(body: string | Uint8Array): string {
  return createHmac('sha256', SECRET).update(body).digest('hex');
}

/** Read one header from Node.js headers or a Fetch `Headers`. */
export function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function')
    return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** ClaimStore with its optional operations required. */
type Store = Required<ClaimStore>;

/** A ClaimStore over a real store (a MemoryStore by default) whose operations can be made to fail, one by one. */
export class SwitchableStore implements ClaimStore {
  readonly inner: ClaimStore;
  constructor(inner: ClaimStore = new MemoryStore()) {
    this.inner = inner;
  }
  /** Operations that throw `error` instead of reaching the store. */
  readonly down = new Set<keyof ClaimStore>();
  error: unknown = new Error('connect ECONNREFUSED 10.0.0.7:6379 (secret-host)');

  #call<K extends keyof Store>(op: K, args: Parameters<Store[K]>): ReturnType<Store[K]> {
    if (this.down.has(op)) return Promise.reject(this.error) as ReturnType<Store[K]>;
    const method = this.inner[op] as (...a: Parameters<Store[K]>) => ReturnType<Store[K]>;
    return method.apply(this.inner, args);
  }
  claim(...args: Parameters<ClaimStore['claim']>) {
    return this.#call('claim', args);
  }
  done(...args: Parameters<ClaimStore['done']>) {
    return this.#call('done', args);
  }
  release(...args: Parameters<ClaimStore['release']>) {
    return this.#call('release', args);
  }
  extend(...args: Parameters<ClaimStore['extend']>) {
    return this.#call('extend', args);
  }
  advance(...args: Parameters<ClaimStore['advance']>) {
    return this.#call('advance', args);
  }
  releaseHold(...args: Parameters<ClaimStore['releaseHold']>) {
    return this.#call('releaseHold', args);
  }
  extendHold(...args: Parameters<ClaimStore['extendHold']>) {
    return this.#call('extendHold', args);
  }
  inspect(...args: Parameters<Store['inspect']>) {
    return this.#call('inspect', args);
  }
  forget(...args: Parameters<Store['forget']>) {
    return this.#call('forget', args);
  }
}

/** What one test configures. */
export interface Scenario {
  gate?: Partial<GateOptions>;
  binding?: Partial<Omit<BindingOptions, 'gate'>>;
  bodyParser?: ServerSetup['bodyParser'];
}

/** One test's server, gate and the record of what happened. */
export class Harness {
  readonly store: SwitchableStore;
  readonly decisions: DecisionEvent[] = [];
  /** Every event the route handler was called with. */
  readonly handled: WebhookEvent[] = [];
  /** Every error that reached the framework's error handling. */
  readonly errors: unknown[] = [];
  /** What the route handler does; by default it answers 200 `{ status: 'processed' }`. */
  behaviour: (event: WebhookEvent) => Promise<Reply | typeof UNANSWERED> = async (event) => ({
    status: 200,
    body: { status: 'processed', key: event.key },
  });
  server!: TestServer;
  /** The gate behind the binding (the last one `setup` made). */
  gate!: Gate;

  constructor(store: ClaimStore = new MemoryStore()) {
    this.store = new SwitchableStore(store);
  }

  static async start(
    makeServer: MakeServer,
    scenario: Scenario = {},
    store?: ClaimStore,
  ): Promise<Harness> {
    const harness = new Harness(store);
    harness.server = await makeServer(harness.setup(scenario));
    return harness;
  }

  setup(scenario: Scenario): ServerSetup {
    const gate = createGate({
      store: this.store,
      // Each test gets its own keys, so a shared store (one Redis for the file) keeps them apart.
      namespace: `http-${randomUUID()}`,
      eventId: 'id',
      onDecision: (event) => this.decisions.push(event),
      ...scenario.gate,
    });
    this.gate = gate;
    const setup: ServerSetup = {
      options: {
        gate,
        verify: (rawBody, headers) => header(headers, 'x-signature') === sign(rawBody),
        ...scenario.binding,
      },
      handle: (event) => {
        this.handled.push(event);
        return this.behaviour(event);
      },
      onError: (error) => this.errors.push(error),
    };
    if (scenario.bodyParser !== undefined) setup.bodyParser = scenario.bodyParser;
    return setup;
  }

  /** POST a signed delivery to `/webhook`. */
  post(
    body: unknown,
    init: { signature?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return this.send(text, {
      headers: {
        'content-type': 'application/json',
        'x-signature': init.signature ?? sign(text),
        ...init.headers,
      },
      ...(init.signal ? { signal: init.signal } : {}),
    });
  }

  send(body: NonNullable<RequestInit['body']>, init: RequestInit): Promise<Response> {
    const fetcher = this.server.fetch ?? fetch;
    return fetcher(`${this.server.url}/webhook`, { method: 'POST', body, ...init });
  }

  count(decision: Decision): number {
    return this.decisions.filter((event) => event.decision === decision).length;
  }

  /** Wait (up to 2 s) until `decision` was reported `times` times; settlement may trail the answer. */
  async waitFor(decision: Decision, times = 1): Promise<void> {
    for (let waited = 0; this.count(decision) < times; waited += 5) {
      if (waited > 2_000) {
        const seen = this.decisions.map((event) => event.decision).join(', ');
        throw new Error(`no ${decision} decision (x${times}) within 2 s; saw: ${seen}`);
      }
      await sleep(5);
    }
  }

  close(): Promise<void> {
    return this.server?.close() ?? Promise.resolve();
  }
}

/** A latch the handler can wait on, with a time limit so a failing test cannot hang. */
export function latch(limitMs = 5_000): { open(): void; wait(): Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, wait: () => Promise.race([opened, sleep(limitMs)]) };
}

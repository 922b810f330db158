/**
 * A hookgate {@link ClaimStore} over an ioredis `Redis` or `Cluster` client that you create
 * and own.
 *
 * @packageDocumentation
 */
import {
  type ClaimState,
  type ClaimStore,
  HookgateError,
  StoreUnavailableError,
} from '@hookgate/core';
import { Deadlines } from './deadline.js';
import { type Script, scripts } from './scripts/index.js';

/**
 * The commands the store sends, as an ioredis `Redis` or `Cluster` (v5 or v6) has them. The
 * store never imports ioredis: any client of this shape will do.
 */
export interface IoRedisClient {
  /** `SET key value PX ms NX GET`: the claim. */
  set(
    key: string,
    value: string,
    px: 'PX',
    milliseconds: number,
    nx: 'NX',
    get: 'GET',
  ): Promise<string | null>;
  /** `EVALSHA sha 1 key ...args`: every other operation. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** `EVAL script 1 key ...args`: only after the server answered `NOSCRIPT`. */
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

/** Options of {@link IoRedisStore}. */
export interface IoRedisStoreOptions {
  /**
   * The deadline of every operation, in ms. An operation without an answer by then (a paused
   * or unreachable server, a command waiting in the client's offline queue) rejects with
   * `StoreUnavailableError`, at most a tenth of `timeoutMs` (and at most 200 ms) late. Keep it
   * well under your provider's attempt timeout, so the gate answers 503 before the provider
   * gives up on the attempt.
   * @default 2000
   */
  timeoutMs?: number;
}

/**
 * A {@link ClaimStore} in Redis, through an ioredis client you create, configure and close.
 *
 * A claim key holds `p:<token>` while processing and `d:<token>` when done; a watermark key
 * holds `<at>:<eventKey>`. Every operation is one command on one key, so any Redis Cluster
 * slot layout works: `claim` is `SET key p:<token> PX ttl NX GET`; `done`, `release`, `extend`
 * and `advance` are Lua scripts run by `EVALSHA`, and by `EVAL` only when the server answers
 * `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`). The client is never modified
 * (no `defineCommand`), and its `keyPrefix`, auto-pipelining and RESP3 are honoured.
 *
 * Every operation has a deadline (`timeoutMs`). A timeout or a client error rejects with
 * `StoreUnavailableError`, its `cause` the underlying error. A timed-out command may still run
 * on the server, so its outcome is unknown, never "not claimed".
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { IoRedisStore } from '@hookgate/ioredis';
 *
 * const store = new IoRedisStore(new Redis(process.env.REDIS_URL));
 * ```
 */
export class IoRedisStore implements ClaimStore {
  readonly #client: IoRedisClient;
  readonly #deadlines: Deadlines;

  /**
   * @param client - an ioredis `Redis` or `Cluster`; you keep it, and close it yourself
   * @throws HookgateError `INVALID_OPTIONS` for a client without the commands above or a bad
   * `timeoutMs`
   */
  constructor(client: IoRedisClient, options: IoRedisStoreOptions = {}) {
    const { timeoutMs = 2000 } = options;
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalsha !== 'function' ||
      typeof client.eval !== 'function' ||
      typeof client.set !== 'function'
    ) {
      throw new HookgateError(
        'INVALID_OPTIONS',
        'IoRedisStore: `client` must be an ioredis Redis or Cluster instance',
      );
    }
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2_147_483_647) {
      throw new HookgateError(
        'INVALID_OPTIONS',
        'IoRedisStore: option `timeoutMs` must be a positive number of milliseconds',
      );
    }
    this.#client = client;
    this.#deadlines = new Deadlines(timeoutMs);
  }

  async claim(key: string, token: string, ttlMs: number): Promise<ClaimState> {
    const owned = 'p:' + token;
    let previous: unknown;
    try {
      previous = await this.#deadlines.guard(
        this.#client.set(key, owned, 'PX', ttlMs, 'NX', 'GET'),
      );
    } catch (error) {
      throw this.#unavailable('claim', error);
    }
    if (previous === null) return 'acquired';
    const value = String(previous);
    // Our own value: ioredis re-sent the SET after a reconnect, and the first one had landed.
    if (value === owned) return 'acquired';
    if (value.startsWith('d:')) return 'done';
    if (value.startsWith('p:')) return 'processing';
    throw new StoreUnavailableError(
      `IoRedisStore: claim key ${key} holds a value hookgate did not write`,
      { cause: new Error(`unexpected value ${JSON.stringify(value.slice(0, 50))}`) },
    );
  }

  async done(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('done', scripts.done, key, [token, ttlMs]);
  }

  async release(key: string, token: string): Promise<boolean> {
    return this.#run('release', scripts.release, key, [token]);
  }

  async extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('extend', scripts.extend, key, [token, ttlMs]);
  }

  async advance(
    key: string,
    at: number,
    eventKey: string,
    ttlMs: number,
    ties: 'drop' | 'apply',
  ): Promise<boolean> {
    return this.#run('advance', scripts.advance, key, [at, eventKey, ttlMs, ties]);
  }

  async #run(
    operation: string,
    script: Script,
    key: string,
    args: (string | number)[],
  ): Promise<boolean> {
    let reply: unknown;
    try {
      reply = await this.#deadlines.guard(this.#evaluate(script, key, args));
    } catch (error) {
      throw this.#unavailable(operation, error);
    }
    if (reply === 1) return true;
    if (reply === 0) return false;
    throw new StoreUnavailableError(`IoRedisStore: ${operation} got an unexpected reply`, {
      cause: new Error(`expected 0 or 1, got ${JSON.stringify(reply)}`),
    });
  }

  /** `EVALSHA`, and `EVAL` (which caches the script again) only when the server lost it. */
  async #evaluate(script: Script, key: string, args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(script.sha, 1, key, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.#client.eval(script.lua, 1, key, ...args);
    }
  }

  #unavailable(operation: string, error: unknown): StoreUnavailableError {
    if (error instanceof DOMException && error.name === 'TimeoutError') {
      return new StoreUnavailableError(
        `IoRedisStore: ${operation} got no answer within ${this.#deadlines.timeoutMs} ms; ` +
          'Redis may still apply it, so its outcome is unknown',
        { cause: error },
      );
    }
    const detail = error instanceof Error ? error.message : String(error);
    return new StoreUnavailableError(`IoRedisStore: ${operation} failed: ${detail}`, {
      cause: error,
    });
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

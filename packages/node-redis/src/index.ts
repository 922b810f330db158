/**
 * A hookgate {@link ClaimStore} over a node-redis client (`createClient()`) or cluster
 * (`createCluster()`) that you create, connect and own.
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

/** The `SET` options a claim sends, spelled as node-redis 5 and 6 know them. */
export interface NodeRedisSetOptions {
  /** `PX <ms>`: the claim TTL. */
  expiration: {
    /** Milliseconds. */
    type: 'PX';
    /** The TTL. */
    value: number;
  };
  /** `NX`: only when the key is absent. */
  condition: 'NX';
  /** `GET`: answer the value found, which tells a loser `processing` from `done`. */
  GET: true;
}

/** Keys and arguments of a script call: strings only, as node-redis requires. */
export interface NodeRedisEvalOptions {
  /** The one key the script touches. */
  keys: string[];
  /** The script's `ARGV`. */
  arguments: string[];
}

/**
 * The commands the store sends, as a node-redis client or cluster (v5 or v6, RESP2 or RESP3)
 * has them. The store never imports `redis`: any client of this shape will do.
 */
export interface NodeRedisClient {
  /** `SET key value PX ms NX GET`: the claim. */
  set(key: string, value: string, options: NodeRedisSetOptions): Promise<unknown>;
  /** `EVALSHA sha 1 key ...args`: every other operation. */
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** `EVAL script 1 key ...args`: only after the server answered `NOSCRIPT`. */
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
}

/** Options of {@link NodeRedisStore}. */
export interface NodeRedisStoreOptions {
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
 * A {@link ClaimStore} in Redis, through a node-redis client or cluster you create, connect
 * and close.
 *
 * A claim key holds `p:<token>` while processing and `d:<token>` when done; a watermark key
 * holds `<at>:<eventKey>`. Every operation is one command on one key, so any Redis Cluster
 * slot layout works: `claim` is `SET key p:<token> PX ttl NX GET`; `done`, `release`, `extend`
 * and `advance` are Lua scripts run by `EVALSHA`, and by `EVAL` only when the server answers
 * `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`). The client is never modified,
 * and RESP2 and RESP3 clients both work.
 *
 * Every operation has a deadline (`timeoutMs`): node-redis's own command timeout stops
 * counting once a command is written, so the store keeps its own. A timeout or a client error
 * rejects with `StoreUnavailableError`, its `cause` the underlying error. A timed-out command
 * may still run on the server, so its outcome is unknown, never "not claimed".
 *
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { NodeRedisStore } from '@hookgate/node-redis';
 *
 * const client = createClient({ url: process.env.REDIS_URL });
 * client.on('error', (error) => logger.warn({ error }, 'redis'));
 * await client.connect();
 * const store = new NodeRedisStore(client);
 * ```
 */
export class NodeRedisStore implements ClaimStore {
  readonly #client: NodeRedisClient;
  readonly #deadlines: Deadlines;

  /**
   * @param client - a node-redis client or cluster; you connect it, keep it and close it
   * @throws HookgateError `INVALID_OPTIONS` for a client without the commands above or a bad
   * `timeoutMs`
   */
  constructor(client: NodeRedisClient, options: NodeRedisStoreOptions = {}) {
    const { timeoutMs = 2000 } = options;
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalSha !== 'function' ||
      typeof client.eval !== 'function' ||
      typeof client.set !== 'function'
    ) {
      throw new HookgateError(
        'INVALID_OPTIONS',
        'NodeRedisStore: `client` must be a node-redis client (createClient) or cluster (createCluster)',
      );
    }
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2_147_483_647) {
      throw new HookgateError(
        'INVALID_OPTIONS',
        'NodeRedisStore: option `timeoutMs` must be a positive number of milliseconds',
      );
    }
    this.#client = client;
    this.#deadlines = new Deadlines(timeoutMs);
  }

  async claim(key: string, token: string, ttlMs: number): Promise<ClaimState> {
    const owned = 'p:' + token;
    let previous: unknown;
    try {
      // Spelled out in full: node-redis silently drops SET options it does not know.
      previous = await this.#deadlines.guard(
        this.#client.set(key, owned, {
          expiration: { type: 'PX', value: ttlMs },
          condition: 'NX',
          GET: true,
        }),
      );
    } catch (error) {
      throw this.#unavailable('claim', error);
    }
    if (previous === null) return 'acquired';
    // A string, or a Buffer under a typeMapping.
    const value = String(previous);
    // Our own value: a re-sent SET whose first attempt had landed.
    if (value === owned) return 'acquired';
    if (value.startsWith('d:')) return 'done';
    if (value.startsWith('p:')) return 'processing';
    throw new StoreUnavailableError(
      `NodeRedisStore: claim key ${key} holds a value hookgate did not write`,
      { cause: new Error(`unexpected value ${JSON.stringify(value.slice(0, 50))}`) },
    );
  }

  async done(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('done', scripts.done, key, [token, String(ttlMs)]);
  }

  async release(key: string, token: string): Promise<boolean> {
    return this.#run('release', scripts.release, key, [token]);
  }

  async extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('extend', scripts.extend, key, [token, String(ttlMs)]);
  }

  async advance(
    key: string,
    at: number,
    eventKey: string,
    ttlMs: number,
    ties: 'drop' | 'apply',
  ): Promise<boolean> {
    return this.#run('advance', scripts.advance, key, [String(at), eventKey, String(ttlMs), ties]);
  }

  async #run(operation: string, script: Script, key: string, args: string[]): Promise<boolean> {
    let reply: unknown;
    try {
      reply = await this.#deadlines.guard(this.#evaluate(script, key, args));
    } catch (error) {
      throw this.#unavailable(operation, error);
    }
    // A number, or a string under a typeMapping.
    if (reply === 1 || reply === '1') return true;
    if (reply === 0 || reply === '0') return false;
    throw new StoreUnavailableError(`NodeRedisStore: ${operation} got an unexpected reply`, {
      cause: new Error(`expected 0 or 1, got ${JSON.stringify(reply)}`),
    });
  }

  /** `EVALSHA`, and `EVAL` (which caches the script again) only when the server lost it. */
  async #evaluate(script: Script, key: string, args: string[]): Promise<unknown> {
    const options = { keys: [key], arguments: args };
    try {
      return await this.#client.evalSha(script.sha, options);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.#client.eval(script.lua, options);
    }
  }

  #unavailable(operation: string, error: unknown): StoreUnavailableError {
    if (error instanceof DOMException && error.name === 'TimeoutError') {
      return new StoreUnavailableError(
        `NodeRedisStore: ${operation} got no answer within ${this.#deadlines.timeoutMs} ms; ` +
          'Redis may still apply it, so its outcome is unknown',
        { cause: error },
      );
    }
    const detail = error instanceof Error ? error.message : String(error);
    return new StoreUnavailableError(`NodeRedisStore: ${operation} failed: ${detail}`, {
      cause: error,
    });
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

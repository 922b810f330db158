/**
 * The Redis side of hookgate's stores, written once for every client library: the Lua
 * scripts, how replies map onto the `ClaimStore` contract, `EVALSHA` with its `EVAL` fallback,
 * and the deadlines. `@hookgate/ioredis` and `@hookgate/node-redis` only say how their client
 * sends three commands. Use one of those; this package is their common part.
 *
 * @packageDocumentation
 * @module @hookgate/redis-core
 */
import {
  type AdvanceRequest,
  type AdvanceState,
  type ClaimState,
  type ClaimStore,
  createError,
  Deadlines,
  foreignValueError,
  optionError,
  parseRecord,
  type StoredRecord,
  storeError,
} from '@hookgate/core';
import { type Script, scripts } from './scripts/index.js';

export { type Script, scripts } from './scripts/index.js';

/**
 * The three commands a Redis store sends, as one client library spells them. Each resolves with
 * the server's reply or rejects with the client's error; none may retry on its own.
 */
export interface RedisCommands {
  /** `SET key value PX ttlMs NX GET`: the value found (`null` when the key was absent). */
  setNxGet(key: string, value: string, ttlMs: number): Promise<unknown>;
  /** `EVALSHA sha 1 key ...args`. */
  evalsha(sha: string, key: string, args: string[]): Promise<unknown>;
  /** `EVAL lua 1 key ...args`: only after the server answered `NOSCRIPT`. */
  eval(lua: string, key: string, args: string[]): Promise<unknown>;
  /**
   * For a cluster client: the same commands sent to the node at `address` (`host:port`, as a
   * `MOVED` or `ASK` reply names it), each preceded by `ASKING` on the same connection when
   * `asking` (the two written back to back). `undefined` when the client does not know that
   * node. Standalone clients leave it out.
   */
  redirect?(address: string, asking: boolean): Promise<RedisCommands | undefined>;
  /**
   * Whether `error` is the client's proof that it never sent the command (so sending it again
   * is safe), e.g. ioredis refusing an auto-pipelined batch whose keys its slot map, updated
   * since they were queued, now puts on two nodes. Clients without such an error leave it out.
   */
  unsent?(error: unknown): boolean;
}

/**
 * For adapter authors: `commands`, each preceded by `ASKING` (what `asking` sends) on the same
 * connection: the two are written back to back, with nothing of another caller in between.
 */
export function afterAsking(
  commands: RedisCommands,
  asking: () => Promise<unknown>,
): RedisCommands {
  const first = <T>(command: () => Promise<T>) => {
    asking().catch(() => {}); // its failure fails the command that follows it
    return command();
  };
  return {
    setNxGet: (key, value, ttlMs) => first(() => commands.setNxGet(key, value, ttlMs)),
    evalsha: (sha, key, args) => first(() => commands.evalsha(sha, key, args)),
    eval: (lua, key, args) => first(() => commands.eval(lua, key, args)),
  };
}

/** `MOVED <slot> <host:port>` or `ASK <slot> <host:port>`: the command was not applied. */
const REDIRECTION = /^(MOVED|ASK) \d+ (\S+)/;
/** A done record without a fingerprint, of an all-digit token: the bare token. */
const ALL_DIGITS = /^\d+$/;
/** Resends per operation, redirections included (a slot moved twice in one operation is rare). */
const MAX_RESENDS = 3;

/** Options every Redis store takes. */
export interface RedisStoreOptions {
  /**
   * The deadline of every operation, in ms. An operation without an answer by then (a paused
   * or unreachable server, a command waiting in the client's offline queue) rejects with
   * `StoreUnavailableError`, up to a tenth of `timeoutMs` late (between 5 ms and 200 ms). Keep it
   * well under your provider's attempt timeout, so the gate answers 503 before the provider
   * gives up on the attempt.
   * @default 2000
   */
  timeoutMs?: number;
}

/**
 * A {@link ClaimStore} in Redis, over any client that can send {@link RedisCommands}.
 *
 * A claim key holds `p:<token>` while processing and, when done, the bare token (the gate's
 * tokens are all digits; `d:<token>` for any other token), each as `p:`/`d:<token>:<fingerprint>`
 * when the gate's `fingerprint` option is on (`SET … NX GET` returns the
 * record found, so a conflict costs no extra round trip); a watermark key
 * holds `<at>:<eventKey>`, or `h:<holdUntil>:<token>:<at>:<eventKey>` while that event is
 * processed (the sequence guard's per-subject hold; `holdUntil` is epoch ms on the server's
 * clock). Every operation is one command on one key, so any Redis Cluster slot layout works:
 * `claim` is `SET key p:<token> PX ttl NX GET` (Redis 7.0 or newer); the others are Lua scripts
 * run by `EVALSHA`, and by `EVAL` only when the server answers `NOSCRIPT` (after a restart, a
 * failover or `SCRIPT FLUSH`). No operation overwrites a value hookgate did not write: it
 * rejects with `StoreUnavailableError` and leaves it.
 *
 * Every operation has a deadline (`timeoutMs`). A timeout or a client error rejects with
 * `StoreUnavailableError`, its `cause` the underlying error. A timed-out command may still run
 * on the server, so its outcome is unknown, never "not claimed".
 */
export class RedisStore implements ClaimStore {
  readonly #name: string;
  readonly #commands: RedisCommands;
  readonly #deadlines: Deadlines;

  /**
   * @param name - the store's name in error messages, e.g. `'IoRedisStore'`
   * @param commands - how the client sends the three commands
   * @throws HookgateError `INVALID_OPTIONS` for a bad `timeoutMs`
   */
  constructor(name: string, commands: RedisCommands, options: RedisStoreOptions = {}) {
    const { timeoutMs = 2000 } = options;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2_147_483_647) {
      throw optionError(name, 'timeoutMs', 'must be a positive number of milliseconds');
    }
    this.#name = name;
    this.#commands = commands;
    this.#deadlines = new Deadlines(timeoutMs);
  }

  claim(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<ClaimState> {
    const record = fingerprint === undefined ? 'p:' + token : `p:${token}:${fingerprint}`;
    return this.#send(
      'claim',
      key,
      (commands) => commands.setNxGet(key, record, ttlMs),
      (previous) => this.#claimed(previous, key, token, fingerprint),
    );
  }

  done(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<boolean> {
    // A bare all-digit token is kept by Redis as an integer in the object header: the compact
    // record. Formed here, not in the script, whose all-digit test in Lua cost Redis as much as
    // the rest of the script's own work (docs/benchmarks.md).
    const record =
      fingerprint !== undefined
        ? `d:${token}:${fingerprint}`
        : ALL_DIGITS.test(token)
          ? token
          : 'd:' + token;
    const args = [token, String(ttlMs), record];
    return this.#run('done', scripts.done, key, args, isOne);
  }

  release(key: string, token: string): Promise<boolean> {
    return this.#run('release', scripts.release, key, [token], isOne);
  }

  extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('extend', scripts.extend, key, [token, String(ttlMs)], isOne);
  }

  advance(key: string, request: AdvanceRequest): Promise<AdvanceState> {
    const { at, eventKey, token, holdMs, ttlMs, ties } = request;
    const args = [String(at), eventKey, token, String(holdMs), String(ttlMs), ties];
    return this.#run('advance', scripts.advance, key, args, (code) =>
      code === 1 ? 'applied' : code === 0 ? 'stale' : 'held',
    );
  }

  releaseHold(key: string, token: string): Promise<boolean> {
    return this.#run('releaseHold', scripts.releaseHold, key, [token], isOne);
  }

  extendHold(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.#run('extendHold', scripts.extendHold, key, [token, String(ttlMs)], isOne);
  }

  inspect(key: string): Promise<StoredRecord> {
    const reading = (reply: unknown): StoredRecord => {
      if (!Array.isArray(reply) || reply.length === 0) return { kind: 'absent' };
      const record = parseRecord(String(reply[0]));
      if (record === undefined) throw foreignValueError(this.#name, 'inspect', key);
      const pttl = Number(reply[1]);
      return pttl >= 0 ? { ...record, ttlMs: pttl } : record;
    };
    return this.#send('inspect', key, evaluating(scripts.inspect, key, []), reading, true);
  }

  forget(key: string): Promise<boolean> {
    return this.#run('forget', scripts.forget, key, [], isOne);
  }

  /** What a claim's `SET … NX GET` found, `previous`, as the claim's state. */
  #claimed(previous: unknown, key: string, token: string, fingerprint?: string): ClaimState {
    if (previous === null) return 'acquired';
    // A string, or a Buffer under a client's type mapping. `p:<token>` or `d:<token>`, then
    // `:<fingerprint>` when the claim carries one; or a done record's bare all-digit token.
    const value = String(previous);
    if (ALL_DIGITS.test(value)) return 'done';
    const kind = value.slice(0, 2);
    const colon = value.indexOf(':', 2);
    // Not a claim record, or one without a token (`p:`, `p::x`): as the scripts read it.
    if ((kind !== 'p:' && kind !== 'd:') || value.length === 2 || colon === 2) {
      throw foreignValueError(this.#name, 'claim', key);
    }
    if (fingerprint !== undefined && colon > 0) {
      const stored = value.slice(colon + 1);
      if (stored !== fingerprint) return { state: 'conflict', fingerprint: stored };
    }
    if (kind === 'd:') return 'done';
    // Our own token: the client re-sent the SET after a reconnect, and the first one had landed.
    return value.slice(2, colon < 0 ? undefined : colon) === token ? 'acquired' : 'processing';
  }

  /**
   * Run a script whose reply is 0, 1 or 2, read by `read`. A -1 (a foreign value) or anything
   * else rejects.
   */
  #run<T>(
    operation: string,
    script: Script,
    key: string,
    args: string[],
    read: (code: 0 | 1 | 2) => T,
  ): Promise<T> {
    const reading = (reply: unknown) => {
      const code = integerOf(reply);
      if (code === 0 || code === 1 || code === 2) return read(code);
      if (code === -1) throw foreignValueError(this.#name, operation, key);
      throw createError(this.#name, 'STORE_UNAVAILABLE', `${operation} got an unexpected reply`, {
        cause: new Error(`expected 0, 1 or 2, got ${JSON.stringify(reply)}`),
      });
    };
    return this.#send(operation, key, evaluating(script, key, args), reading, true);
  }

  /**
   * Send a command (a script's, when `script`) and settle with `read(reply)`, or reject with
   * what `read` throws. Any failure to get a reply (a synchronous throw too) is
   * `StoreUnavailableError`, with reason `foreign-value` when `key` holds another type (a hash,
   * a list: `WRONGTYPE`), and so is a reply later than the deadline.
   *
   * A command is resent to the node a `MOVED` or `ASK` reply names (with `ASKING` first for an
   * ASK), or as it was when the client says it never sent it, up to three times: either proves
   * the command was not applied, so resending is safe. Cluster clients follow redirections
   * themselves, but not every time: ioredis follows one only when every command of an
   * auto-pipelined batch met the same one, and passes a mixed batch's `-ASK` on as an error. A
   * script the node answers `NOSCRIPT` to (it lost its cache) is sent to it again by `EVAL`
   * (which caches it again).
   *
   * One promise of its own and one reaction per attempt, each failure handled in one place
   * rather than in a chained promise per layer: this runs for every store operation (`pnpm
   * bench --only=gate-cpu` reports the gate's CPU per delivery, the store's included).
   */
  #send<T>(
    operation: string,
    key: string,
    send: Send,
    read: (reply: unknown) => T,
    script = false,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      /** Settled (answered, failed, or past its deadline): nothing more is sent. */
      let over = false;
      const fail = (error: unknown) => {
        over = true;
        let failure = error;
        try {
          failure = errorText(error).startsWith('WRONGTYPE')
            ? foreignValueError(this.#name, operation, key, error)
            : storeError(this.#name, operation, error);
        } catch {
          // An error that cannot be described (its message a symbol): passed on as it is.
        }
        reject(failure);
      };
      const pending = this.#deadlines.start(fail);
      let commands = this.#commands;
      let resent = 0;
      let lua = false;
      const answered = (reply: unknown) => {
        over = true;
        if (!this.#deadlines.finish(pending)) return;
        try {
          resolve(read(reply));
        } catch (error) {
          reject(error);
        }
      };
      const failed = async (error: unknown): Promise<void> => {
        // The deadline passed already (the caller has its rejection): a redirection's or an
        // unsent command's proof that it was not applied must not become a late write.
        if (over) return;
        try {
          if (!script || lua || !errorText(error).startsWith('NOSCRIPT')) {
            if (resent === MAX_RESENDS) throw error;
            resent++;
            commands = await this.#resendTo(error, commands);
            lua = false;
          } else lua = true;
        } catch (reason) {
          if (this.#deadlines.finish(pending)) fail(reason);
          return;
        }
        if (!over) attempt(send, commands, lua).then(answered, failed);
      };
      attempt(send, commands, lua).then(answered, failed);
    });
  }

  /**
   * Where to send again a command that failed with `error`: to the same `commands` when the
   * client says it never sent it, to the node a `MOVED` or `ASK` reply names; otherwise
   * `error`, thrown.
   */
  async #resendTo(error: unknown, commands: RedisCommands): Promise<RedisCommands> {
    if (this.#commands.unsent?.(error)) return commands;
    const redirection = REDIRECTION.exec(errorText(error));
    if (redirection === null) throw error;
    const next = await this.#commands.redirect?.(redirection[2]!, redirection[1] === 'ASK');
    if (next === undefined) throw error;
    return next;
  }
}

/**
 * How an operation sends its command on `commands`; a script's by `EVAL` when `lua` (after the
 * server answered `NOSCRIPT`), by `EVALSHA` otherwise.
 */
type Send = (commands: RedisCommands, lua: boolean) => Promise<unknown>;

/** A script's {@link Send}. */
function evaluating(script: Script, key: string, args: string[]): Send {
  return (commands, lua) =>
    lua ? commands.eval(script.lua, key, args) : commands.evalsha(script.sha, key, args);
}

/**
 * A script's integer reply: a number (a bigint, under RESP3 type mappings), or its text (a
 * string or a Buffer, under a client's type mapping); `NaN` for anything else, which is no
 * answer (`Number()` would read a nil or an empty array as 0).
 */
function integerOf(reply: unknown): number {
  if (typeof reply === 'number') return reply;
  if (typeof reply === 'bigint') return Number(reply);
  const text =
    typeof reply === 'string'
      ? reply
      : reply instanceof Uint8Array
        ? utf8.decode(reply)
        : undefined;
  return text !== undefined && INTEGER.test(text) ? Number(text) : Number.NaN;
}

const INTEGER = /^-?\d+$/;
const utf8 = new TextDecoder();

function isOne(code: number): boolean {
  return code === 1;
}

/**
 * `send(commands, lua)` as a native promise (a client may answer with another thenable), a
 * synchronous throw turned into a rejection.
 */
function attempt(send: Send, commands: RedisCommands, lua: boolean): Promise<unknown> {
  try {
    return Promise.resolve(send(commands, lua));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The message of a client's error (a Redis error reply's text), or `''`. */
function errorText(error: unknown): string {
  return error instanceof Error && typeof error.message === 'string' ? error.message : '';
}

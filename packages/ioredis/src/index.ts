/**
 * A hookgate `ClaimStore` over an ioredis `Redis` or `Cluster` client that you create
 * and own.
 *
 * @packageDocumentation
 * @module @hookgate/ioredis
 */
import { optionError } from '@hookgate/core';
import {
  afterAsking,
  type RedisCommands,
  RedisStore,
  type RedisStoreOptions,
} from '@hookgate/redis-core';

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
  /**
   * A `Cluster`'s node clients: a command a node answered `MOVED` or `ASK` (which ioredis does
   * not follow within a mixed auto-pipelined batch) is resent to the node named.
   */
  nodes?(role: 'all'): IoRedisNode[];
  /** The client's options. */
  options?: {
    /** Put before every key by the client. */
    keyPrefix?: string;
  };
  /** A `Redis` client's connection state: its socket takes writes when `'ready'`. */
  status?: string;
  /** A `Redis` client's socket (a `Cluster` has one per node client, and none of its own). */
  stream?: Corkable;
}

/** A socket whose writes can be held and then sent together (`net.Socket`, `tls.TLSSocket`). */
export interface Corkable {
  /** Hold the writes that follow in memory. */
  cork(): void;
  /** Send the held writes, together. */
  uncork(): void;
}

/** One node client of an ioredis `Cluster`. */
export interface IoRedisNode extends Omit<IoRedisClient, 'nodes' | 'options'> {
  /** Where it connects, and its own `keyPrefix` if it has one. */
  options: {
    /** The node's host, as the cluster knows it. */
    host?: string;
    /** The node's port. */
    port?: number;
    /** Put before every key by this node client, if set. */
    keyPrefix?: string;
  };
  /** `ASKING`: the next command may touch a slot this node is importing. */
  asking(): Promise<unknown>;
}

/**
 * ioredis's rejection of an auto-pipelined batch, before sending it, whose keys the slot map
 * (updated by a `MOVED` reply since they were queued) now puts on two nodes.
 */
const SPLIT_BATCH = 'All keys in the pipeline should belong to the same slots allocation group';

/** Options of {@link IoRedisStore}: `timeoutMs`, the deadline of every operation (2000 ms). */
export type IoRedisStoreOptions = RedisStoreOptions;

/**
 * A `ClaimStore` in Redis, through an ioredis client you create, configure and close.
 *
 * A claim key holds `p:<token>` while processing and, when done, the bare token (the gate's
 * tokens are all digits; `d:<token>` for any other token, and `p:`/`d:<token>:<fingerprint>`
 * with the gate's `fingerprint` option); a watermark key holds
 * `<at>:<eventKey>`, or `h:<holdUntil>:<token>:<at>:<eventKey>` while an event holds its
 * subject. Every operation is one command on one key, so any Redis Cluster
 * slot layout works: `claim` is `SET key p:<token> PX ttl NX GET`; every other operation is a
 * Lua script run by `EVALSHA`, and by `EVAL` only when the server answers
 * `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`). The client is never modified
 * (no `defineCommand`), and its `keyPrefix`, auto-pipelining and RESP3 are honoured. Its
 * sockets (a `Cluster`'s: every node's) are corked from the store's second command in a tick to
 * the end of the tick, so that the tick's commands leave each in a few writes, not one each (see
 * `writesTogether`).
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
export class IoRedisStore extends RedisStore {
  /**
   * @param client - an ioredis `Redis` or `Cluster`; you keep it, and close it yourself
   * @throws HookgateError `INVALID_OPTIONS` for a client without the commands above or a bad
   * `timeoutMs`
   */
  constructor(client: IoRedisClient, options: IoRedisStoreOptions = {}) {
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalsha !== 'function' ||
      typeof client.eval !== 'function' ||
      typeof client.set !== 'function'
    ) {
      throw optionError('IoRedisStore', 'client', 'must be an ioredis Redis or Cluster instance');
    }
    const together = writesTogether(client);
    const commands = (
      on: Omit<IoRedisClient, 'nodes' | 'options'>,
      prefix = '',
    ): RedisCommands => ({
      // Positional arguments: the only form ioredis accepts for SET options.
      setNxGet: (key, value, ttlMs) => {
        together();
        return on.set(prefix + key, value, 'PX', ttlMs, 'NX', 'GET');
      },
      evalsha: (sha, key, args) => {
        together();
        return on.evalsha(sha, 1, prefix + key, ...args);
      },
      eval: (lua, key, args) => on.eval(lua, 1, prefix + key, ...args),
    });
    super(
      'IoRedisStore',
      {
        ...commands(client),
        redirect: async (address, asking) => redirect(client, address, asking),
        unsent: (error) => error instanceof Error && error.message === SPLIT_BATCH,
      },
      options,
    );

    /** The node at `address`, its commands preceded by ASKING when `asking`. */
    function redirect(
      cluster: IoRedisClient,
      address: string,
      asking: boolean,
    ): RedisCommands | undefined {
      const node = cluster
        .nodes?.('all')
        .find(({ options: o }) => `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}` === address);
      if (node === undefined) return undefined;
      // The cluster puts its keyPrefix before every key; a node client it made may not.
      const prefix = node.options.keyPrefix ? '' : (cluster.options?.keyPrefix ?? '');
      const send = commands(node, prefix);
      return asking ? afterAsking(send, () => node.asking()) : send;
    }
  }
}

/**
 * The writes of one tick, together, in batches: the first command the store sends in a tick goes
 * out at once; a second one corks the sockets it may go out on (a `Redis` client's, or every
 * node's of a `Cluster`). They are uncorked, and corked again, after every quarter as many
 * commands as the tick before sent (at least two), and at the end of the tick
 * (`process.nextTick`, which runs after the microtasks of the tick).
 *
 * ioredis writes each command on its own, a system call each: three quarters of the client's
 * CPU per delivery at 64 concurrent deliveries. But a tick's commands all held to its end reach
 * Redis at once, after the client has done the whole tick's work, and Redis idles until then:
 * at 64 deliveries in flight, on a machine whose system calls are cheap, that ran at 0.74x to
 * 0.82x of the same commands sent by hand each alone; a quarter at a time, at 1.2x to 1.3x
 * (docs/benchmarks.md). A command alone in its tick (one delivery at a time) is not held at all:
 * corking it only delayed it. Nothing waits longer than the tick it was sent in. A connection
 * that is not `ready` (its commands wait in the offline queue) is left alone.
 */
function writesTogether(client: IoRedisClient): () => void {
  /** `undefined`: no command yet this tick; `ALONE`: one, sent at once; else the corked sockets. */
  let tick: readonly Corkable[] | undefined;
  /** Commands sent this tick, and in the tick before. */
  let sent = 0;
  let before = 0;
  /** Commands held since the sockets were last uncorked, and how many a batch holds. */
  let held = 0;
  let batch = 0;
  const endOfTick = () => {
    const sockets = tick!;
    tick = undefined;
    before = sent;
    sent = 0;
    for (const socket of sockets) socket.uncork();
  };
  return () => {
    sent++;
    if (tick === undefined) {
      tick = ALONE;
      process.nextTick(endOfTick);
    } else if (tick === ALONE) {
      tick = readySockets(client);
      for (const socket of tick) socket.cork();
      held = 1;
      batch = Math.max(2, before >> 2);
    } else {
      if (held === batch) {
        for (const socket of tick) {
          socket.uncork();
          socket.cork();
        }
        held = 0;
      }
      held++;
    }
  };
}

/** The tick's first command: sent at once, nothing corked. */
const ALONE: readonly Corkable[] = [];

/** The sockets of a ready `Redis` client, or of a `Cluster`'s ready node clients. */
function readySockets(client: IoRedisClient): Corkable[] {
  const clients = client.nodes?.('all') ?? [client];
  const sockets: Corkable[] = [];
  for (const { status, stream } of clients) {
    if (status === 'ready' && typeof stream?.cork === 'function') sockets.push(stream);
  }
  return sockets;
}

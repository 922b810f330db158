/**
 * A hookgate `ClaimStore` over a node-redis client (`createClient()`) or cluster
 * (`createCluster()`) that you create, connect and own.
 *
 * @packageDocumentation
 * @module @hookgate/node-redis
 */
import { optionError } from '@hookgate/core';
import {
  afterAsking,
  type RedisCommands,
  RedisStore,
  type RedisStoreOptions,
} from '@hookgate/redis-core';

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
  /**
   * A cluster's nodes by `host:port`: a command a node answered `MOVED` or `ASK` is resent to
   * the node named, should node-redis ever pass such a reply on (it follows them itself).
   */
  readonly nodeByAddress?: Map<string, unknown>;
  /** A cluster's client for one of its nodes. */
  nodeClient?(node: never): Promise<NodeRedisNodeClient>;
  /**
   * A view of the client with other command options (node-redis 5 and 6): the store sends its
   * commands through `withCommandOptions({ timeout: 0 })`, without node-redis's own timeout.
   */
  withCommandOptions?(options: NodeRedisCommandOptions): NodeRedisCommands;
}

/** The command options the store sets on its view of the client. */
export interface NodeRedisCommandOptions {
  /** `0`: no node-redis timeout for the store's commands (the store keeps its own deadline). */
  timeout: number;
}

/** The commands the store sends through a client (or its view with other command options). */
export type NodeRedisCommands = Pick<NodeRedisClient, 'set' | 'evalSha' | 'eval'>;

/** The client of one node of a node-redis cluster. */
export interface NodeRedisNodeClient extends Omit<NodeRedisClient, 'nodeByAddress' | 'nodeClient'> {
  /** `ASKING`: the next command may touch a slot this node is importing. */
  asking(): Promise<unknown>;
  /** As the cluster client's: a view of this node's client without node-redis's own timeout. */
  withCommandOptions?(options: NodeRedisCommandOptions): NodeRedisCommands;
}

/** Options of {@link NodeRedisStore}: `timeoutMs`, the deadline of every operation (2000 ms). */
export type NodeRedisStoreOptions = RedisStoreOptions;

/**
 * A `ClaimStore` in Redis, through a node-redis client or cluster you create, connect
 * and close.
 *
 * A claim key holds `p:<token>` while processing and, when done, the bare token (the gate's
 * tokens are all digits; `d:<token>` for any other token, and `p:`/`d:<token>:<fingerprint>`
 * with the gate's `fingerprint` option); a watermark key holds
 * `<at>:<eventKey>`, or `h:<holdUntil>:<token>:<at>:<eventKey>` while an event holds its
 * subject. Every operation is one command on one key, so any Redis Cluster
 * slot layout works: `claim` is `SET key p:<token> PX ttl NX GET`; every other operation is a
 * Lua script run by `EVALSHA`, and by `EVAL` only when the server answers
 * `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`). The client is never modified,
 * and RESP2 and RESP3 clients both work.
 *
 * Every operation has a deadline (`timeoutMs`): node-redis's own command timeout stops
 * counting once a command is written, so the store keeps its own, and it is the only one: the
 * store sends its commands through `client.withCommandOptions({ timeout: 0 })`, so that they do
 * not also pay node-redis's timer per command (node-redis 6 sets one of 5 s by default). A
 * timeout or a client error rejects with `StoreUnavailableError`, its `cause` the underlying
 * error. A timed-out command may still run on the server, so its outcome is unknown, never
 * "not claimed"; one still waiting in node-redis's offline queue is sent when the client
 * reconnects (`disableOfflineQueue: true` makes a disconnected client fail it at once).
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
export class NodeRedisStore extends RedisStore {
  /**
   * @param client - a node-redis client or cluster; you connect it, keep it and close it
   * @throws HookgateError `INVALID_OPTIONS` for a client without the commands above or a bad
   * `timeoutMs`
   */
  constructor(client: NodeRedisClient, options: NodeRedisStoreOptions = {}) {
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalSha !== 'function' ||
      typeof client.eval !== 'function' ||
      typeof client.set !== 'function'
    ) {
      throw optionError(
        'NodeRedisStore',
        'client',
        'must be a node-redis client (createClient) or cluster (createCluster)',
      );
    }
    super(
      'NodeRedisStore',
      {
        ...commands(client),
        redirect: async (address, asking) => {
          const node = client.nodeByAddress?.get(address);
          if (node === undefined || client.nodeClient === undefined) return undefined;
          const nodeClient = await client.nodeClient(node as never);
          const send = commands(nodeClient);
          return asking ? afterAsking(send, () => nodeClient.asking()) : send;
        },
      },
      options,
    );
  }
}

/**
 * The three commands, as node-redis spells them, sent without node-redis's own command timeout
 * where the client can be told so: the store's deadline is the one authority (an
 * `AbortSignal.timeout` per command was the largest single CPU cost of a delivery). node-redis 6
 * merges the options given with the client's; node-redis 5 replaces them, which for the store's
 * commands only drops options it does not use.
 */
function commands(
  client: NodeRedisCommands & Pick<NodeRedisClient, 'withCommandOptions'>,
): RedisCommands {
  const on: NodeRedisCommands =
    typeof client.withCommandOptions === 'function'
      ? client.withCommandOptions({ timeout: 0 })
      : client;
  return {
    // Spelled out in full: node-redis silently drops SET options it does not know.
    setNxGet: (key, value, ttlMs) =>
      on.set(key, value, {
        expiration: { type: 'PX', value: ttlMs },
        condition: 'NX',
        GET: true,
      }),
    // Script arguments must be strings in node-redis; RedisStore passes only strings.
    evalsha: (sha, key, args) => on.evalSha(sha, { keys: [key], arguments: args }),
    eval: (lua, key, args) => on.eval(lua, { keys: [key], arguments: args }),
  };
}

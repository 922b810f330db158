import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseInfo } from './resp.js';
import { type RedisServer, type RedisServerOptions, startServer } from './server.js';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The binary that creates the cluster: `redis-cli` on `PATH`, or `HOOKGATE_REDIS_CLI`. */
export const REDIS_CLI = process.env.HOOKGATE_REDIS_CLI ?? 'redis-cli';

/**
 * The cluster slot of `key`, computed here as Redis does (CRC16-XMODEM of the key, or of its
 * `{hash tag}`, modulo 16384): for a test that searches for a key in a given slot without a
 * `CLUSTER KEYSLOT` round trip per candidate.
 */
export function keySlot(key: string): number {
  let bytes: Uint8Array = Buffer.from(key);
  const open = bytes.indexOf(0x7b); // {
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    crc &= 0xffff;
  }
  return crc & 16383;
}

/** Options of {@link startCluster}. */
export interface RedisClusterOptions extends Omit<RedisServerOptions, 'cluster'> {
  /** Masters; the 16384 slots are split evenly between them. @default 3 */
  masters?: number;
  /** Replicas per master (needed for {@link RedisCluster.failover}). @default 0 */
  replicas?: number;
}

/** One node as `CLUSTER NODES` describes it. */
export interface ClusterNode {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** The master's id, for a replica. */
  masterId: string | undefined;
  /** Whether the cluster flags it as failing. */
  failing: boolean;
  /** Slot ranges `[from, to]` it serves (masters). */
  slots: [number, number][];
}

/** A Redis Cluster of harness-started nodes on loopback ports. */
export class RedisCluster {
  /** Every node, masters and replicas, in creation order (added masters last). */
  get nodes(): readonly RedisServer[] {
    return this.#nodes;
  }
  readonly #nodes: RedisServer[];
  readonly #options: RedisServerOptions;

  /** @internal Use {@link startCluster}. */
  constructor(nodes: readonly RedisServer[], options: RedisServerOptions = {}) {
    this.#nodes = [...nodes];
    this.#options = options;
  }

  /**
   * Start one more (empty) master and join it to the cluster (`redis-cli --cluster add-node`).
   * It serves no slot until {@link rebalance} or {@link moveSlot} gives it some.
   */
  async addMaster(): Promise<RedisServer> {
    const node = await startServer({ ...this.#options, cluster: true });
    this.#nodes.push(node);
    const any = this.#anyRunning();
    await run(
      REDIS_CLI,
      ['--cluster', 'add-node', `${node.host}:${node.port}`, `${any.host}:${any.port}`],
      { timeout: 30_000 },
    );
    // Wait until every node knows it.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const views = await Promise.all(
        this.#nodes.filter((n) => n.state === 'running').map((n) => this.topology(n)),
      );
      if (views.every((view) => view.some((entry) => entry.port === node.port))) break;
      if (Date.now() > deadline) throw new Error('redis-harness: the new master was never known');
      await sleep(50);
    }
    // The new node answers CLUSTERDOWN to a MIGRATE until it sees the whole slot map.
    await this.waitHealthy();
    return node;
  }

  /**
   * Spread the slots evenly over the masters, empty ones included
   * (`redis-cli --cluster rebalance --cluster-use-empty-masters`), moving keys as it goes.
   */
  async rebalance(): Promise<void> {
    // redis-cli stops at the first node that is not ready for a slot (a view that lags on a
    // busy machine); run again, it takes up where it stopped.
    for (let attempt = 1; ; attempt++) {
      const any = this.#anyRunning();
      try {
        await run(
          REDIS_CLI,
          ['--cluster', 'rebalance', `${any.host}:${any.port}`, '--cluster-use-empty-masters'],
          { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
        );
        return;
      } catch (error) {
        if (attempt >= 5) throw error;
        await run(REDIS_CLI, ['--cluster', 'fix', `${any.host}:${any.port}`, '--cluster-yes'], {
          timeout: 120_000,
          maxBuffer: 64 * 1024 * 1024,
        }).catch(() => {});
        await this.waitHealthy();
      }
    }
  }

  /**
   * Move one slot to `target`, as `redis-cli --cluster reshard` does: IMPORTING on the target,
   * MIGRATING on the source, its keys moved in batches by `MIGRATE`, then the slot assigned to
   * the target on every master. While it moves, the source answers `-ASK` for keys it no longer
   * has. `pauseMs` waits between the batches (a slow migration, for a storm to run into).
   * @returns whether it moved: `false` when `target` already served the slot
   */
  async moveSlot(slot: number, target: RedisServer, pauseMs = 0): Promise<boolean> {
    const topology = await this.topology();
    const owner = topology.find(
      (node) =>
        node.role === 'master' && node.slots.some(([from, to]) => from <= slot && slot <= to),
    );
    if (owner === undefined) throw new Error(`redis-harness: no master serves slot ${slot}`);
    if (owner.port === target.port) return false;
    const source = this.server(owner.port);
    const idOf = (server: RedisServer) => topology.find((node) => node.port === server.port)!.id;
    await target.command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', idOf(source));
    await source.command('CLUSTER', 'SETSLOT', slot, 'MIGRATING', idOf(target));
    for (;;) {
      const keys = (await source.command('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
      if (keys.length === 0) break;
      await source.command('MIGRATE', target.host, target.port, '', 0, 10_000, 'KEYS', ...keys);
      if (pauseMs > 0) await sleep(pauseMs);
    }
    // The order the Redis docs give: the target first (it owns the slot before anyone points a
    // client at it), then the source, then the other masters. The other way round, the source
    // can send a client to a target that still sends it back.
    const masters = topology.filter((entry) => entry.role === 'master').map((node) => node.port);
    const order = [
      target.port,
      source.port,
      ...masters.filter((port) => port !== target.port && port !== source.port),
    ];
    for (const port of order) {
      await this.server(port).command('CLUSTER', 'SETSLOT', slot, 'NODE', idOf(target));
    }
    return true;
  }

  /** `{ host, port }` of every node, for a cluster client's startup nodes. */
  get rootNodes(): { host: string; port: number }[] {
    return this.nodes.map(({ host, port }) => ({ host, port }));
  }

  /** The harness server listening on `port`. */
  server(port: number): RedisServer {
    const server = this.nodes.find((node) => node.port === port);
    if (server === undefined) throw new Error(`redis-harness: no cluster node on port ${port}`);
    return server;
  }

  /** The topology as `node` (by default any running node) sees it. */
  async topology(node: RedisServer = this.#anyRunning()): Promise<ClusterNode[]> {
    const text = String(await node.command('CLUSTER', 'NODES'));
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, master, , , , , ...slots] = line.split(' ');
        const flagList = (flags ?? '').split(',');
        return {
          id: id!,
          port: Number(address!.split('@')[0]!.split(':')[1]),
          role: flagList.includes('master') ? 'master' : 'replica',
          masterId: master === '-' ? undefined : master,
          failing: flagList.includes('fail') || flagList.includes('fail?'),
          slots: slots
            .filter((slot) => !slot.startsWith('['))
            .map((slot) => {
              const [from, to = from] = slot.split('-');
              return [Number(from), Number(to)] as [number, number];
            }),
        } satisfies ClusterNode;
      });
  }

  /** The current masters. */
  async masters(): Promise<RedisServer[]> {
    const nodes = await this.topology();
    return nodes
      .filter((node) => node.role === 'master' && node.slots.length > 0)
      .map((node) => this.server(node.port));
  }

  /** The master serving `key`'s slot. */
  async masterFor(key: string): Promise<RedisServer> {
    const slot = Number(await this.#anyRunning().command('CLUSTER', 'KEYSLOT', key));
    const nodes = await this.topology();
    const owner = nodes.find(
      (node) =>
        node.role === 'master' && node.slots.some(([from, to]) => from <= slot && slot <= to),
    );
    if (owner === undefined) throw new Error(`redis-harness: no master serves slot ${slot}`);
    return this.server(owner.port);
  }

  /**
   * Promote a replica of `master` and wait until the cluster is healthy again. `mode`:
   * `'graceful'` (`CLUSTER FAILOVER`, the master must be up; no acknowledged write is lost),
   * `'force'` (without the master's agreement), `'takeover'` (without any vote). A failover
   * that has not happened after a few seconds (an election can time out on a busy machine) is
   * asked for again, `'force'` and then `'takeover'`.
   * @default mode 'graceful' when the master runs, else 'takeover'
   * @returns the new master
   */
  async failover(
    master: RedisServer,
    mode: 'graceful' | 'force' | 'takeover' = master.state === 'running' ? 'graceful' : 'takeover',
  ): Promise<RedisServer> {
    const deadline = Date.now() + 30_000;
    let replica: RedisServer | undefined;
    while (replica === undefined) {
      replica = (await this.replicasOf(master)).find((node) => node.state === 'running');
      if (replica !== undefined) break;
      if (Date.now() > deadline)
        throw new Error(`redis-harness: ${master.port} has no live replica`);
      await sleep(50);
    }
    const modes = (['graceful', 'force', 'takeover'] as const).slice(
      ['graceful', 'force', 'takeover'].indexOf(mode),
    );
    let attempt = 0;
    let askedAt = 0;
    for (;;) {
      if (Date.now() - askedAt > 5_000) {
        const current = modes[Math.min(attempt++, modes.length - 1)]!;
        await replica.command(
          'CLUSTER',
          'FAILOVER',
          ...(current === 'graceful' ? [] : [current.toUpperCase()]),
        );
        askedAt = Date.now();
      }
      const role = (await replica.info('replication'))['role'];
      if (role === 'master') break;
      if (Date.now() > deadline) throw new Error(`redis-harness: failover of ${master.port} hung`);
      await sleep(50);
    }
    await this.waitHealthy();
    return replica;
  }

  /** The replicas of `master`. */
  async replicasOf(master: RedisServer): Promise<RedisServer[]> {
    const nodes = await this.topology();
    const id = nodes.find((node) => node.port === master.port)?.id;
    return nodes
      .filter((node) => node.role === 'replica' && node.masterId === id)
      .map((node) => this.server(node.port));
  }

  /**
   * Wait until every running node reports `cluster_state:ok` with all 16384 slots served, and
   * every running replica is in sync with its master.
   */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        if (await this.#healthy()) return;
        last = 'not ok yet';
      } catch (error) {
        last = String(error);
      }
      if (Date.now() > deadline)
        throw new Error(`redis-harness: cluster never got healthy: ${last}`);
      await sleep(50);
    }
  }

  async #healthy(): Promise<boolean> {
    for (const node of this.nodes) {
      if (node.state !== 'running') continue;
      const info = parseInfo(String(await node.command('CLUSTER', 'INFO')));
      if (info['cluster_state'] !== 'ok' || info['cluster_slots_ok'] !== '16384') return false;
      const replication = await node.info('replication');
      if (replication['role'] === 'slave' && replication['master_link_status'] !== 'up') {
        // A replica of a dead master never syncs; only require live masters' replicas.
        const master = this.nodes.find((n) => n.port === Number(replication['master_port']));
        if (master?.state === 'running') return false;
      }
    }
    // Every slot must be served by a master that is up, and every running node must see the
    // same roles (after a failover, the news that the old master is a replica now spreads).
    let seen: string | undefined;
    for (const node of this.nodes) {
      if (node.state !== 'running') continue;
      const topology = await this.topology(node);
      for (const entry of topology) {
        if (entry.role === 'master' && entry.slots.length > 0) {
          if (this.server(entry.port).state !== 'running' || entry.failing) return false;
        }
      }
      const view = topology
        .map((entry) => `${entry.port}:${entry.role}:${entry.masterId ?? '-'}:${entry.slots}`)
        .sort()
        .join(' ');
      if (seen !== undefined && view !== seen) return false;
      seen = view;
    }
    return true;
  }

  /** Stop every node and delete their dirs. */
  async dispose(): Promise<void> {
    await Promise.all(this.#nodes.map((node) => node.dispose()));
  }

  #anyRunning(): RedisServer {
    const node = this.nodes.find((n) => n.state === 'running');
    if (node === undefined) throw new Error('redis-harness: no cluster node is running');
    return node;
  }
}

/**
 * Start a cluster: `masters × (1 + replicas)` nodes, joined with `redis-cli --cluster create`,
 * and wait until it is healthy. Dispose it in `afterAll`.
 */
export async function startCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const { masters = 3, replicas = 0, ...serverOptions } = options;
  const count = masters * (1 + replicas);
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < count; i++)
      nodes.push(await startServer({ ...serverOptions, cluster: true }));
    await run(
      REDIS_CLI,
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `${node.host}:${node.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    const cluster = new RedisCluster(nodes, serverOptions);
    await cluster.waitHealthy();
    return cluster;
  } catch (error) {
    await Promise.all(nodes.map((node) => node.dispose()));
    throw error;
  }
}

import { type ChildProcess, spawn } from 'node:child_process';
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  assertOwnPort,
  parseInfo,
  type Reply,
  ReplyError,
  rawCommand,
  rawCommands,
} from './resp.js';

/**
 * The binary the harness runs: `redis-server` found on `PATH` (spawn looks it up), or the one
 * `HOOKGATE_REDIS_SERVER` names.
 */
export const REDIS_SERVER = process.env.HOOKGATE_REDIS_SERVER ?? 'redis-server';

/** Options of {@link startRedis}. */
export interface RedisServerOptions {
  /** Persist writes in an append-only file, which survives `kill` + `restart`. @default false */
  appendonly?: boolean;
  /** How often the AOF is fsynced, when `appendonly`. @default 'everysec' */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** Run as a cluster node (used by {@link startCluster}). @default false */
  cluster?: boolean;
  /** `cluster-node-timeout`, ms: how soon a dead master is failed over. @default 1000 */
  clusterNodeTimeoutMs?: number;
  /** More `redis.conf` lines, e.g. `['maxmemory 10mb']`. */
  config?: readonly string[];
  /** The parent of the server's temp dir. @default os.tmpdir() */
  tmpRoot?: string;
}

/** Where a server is in its life. */
export type ServerState = 'running' | 'paused' | 'stopped' | 'disposed';

const live = new Set<RedisServer>();
let exitHookInstalled = false;

const DIR_PREFIX = 'hookgate-redis-';
const OWNER_FILE = 'harness.json';

/** SIGKILL every server still running when the process exits (a failed test, a crash). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  reapOrphans();
  process.once('exit', () => {
    for (const server of live) server.killSync();
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Servers left behind by a test process that was itself SIGKILLed (its exit hook never ran):
 * each dir records its owner's pid; when the owner is gone, SIGKILL the server, but only if
 * that pid is still a `redis-server` running in that very dir, and delete the dir.
 */
function reapOrphans(root = tmpdir()): void {
  let names: string[];
  try {
    names = readdirSync(root).filter((name) => name.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(root, name);
    let record: { owner: number; pid: number };
    try {
      record = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue; // not ours, or still being set up
    }
    if (alive(record.owner)) continue;
    try {
      const { pid } = record;
      if (
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server') &&
        readlinkSync(`/proc/${pid}/cwd`) === dir
      ) {
        process.kill(pid, 'SIGKILL');
      }
    } catch {
      // already gone (or a zombie): nothing to kill
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A port nobody listens on right now (the OS picks it), never 6379. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.unref();
      probe.on('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (port > 0 && port !== 6379) return port;
  }
}

/**
 * A loopback port no Redis will ever answer on, for clients that must never reach a server:
 * held, for as long as the test needs it, by a server that closes every connection at once. A
 * merely free port can be taken meanwhile by a `redis-server` another test process starts, and
 * a client retrying in the background would then reach it.
 */
export async function deadPort(): Promise<{ port: number; close(): Promise<void> }> {
  const holder = createServer((socket) => socket.destroy());
  holder.unref();
  const port = await new Promise<number>((resolve, reject) => {
    holder.on('error', reject);
    holder.listen(0, '127.0.0.1', () => {
      const address = holder.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  return { port, close: () => new Promise<void>((resolve) => holder.close(() => resolve())) };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * One `redis-server` process the harness started, on a loopback port, in its own temp dir.
 * Every verb acts on this process by its pid; nothing here can reach another Redis.
 */
export class RedisServer {
  readonly host = '127.0.0.1';
  readonly port: number;
  /** The cluster bus port (cluster nodes only). */
  readonly busPort: number | undefined;
  /** The server's working dir: `redis.conf`, its log, AOF and `nodes.conf`. */
  readonly dir: string;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #state: ServerState = 'stopped';

  /** @internal Use {@link startRedis}. */
  constructor(port: number, busPort: number | undefined, options: RedisServerOptions) {
    assertOwnPort(port);
    this.port = port;
    this.busPort = busPort;
    this.dir = mkdtempSync(join(options.tmpRoot ?? tmpdir(), DIR_PREFIX));
    const conf = [
      'bind 127.0.0.1',
      `port ${port}`,
      `dir ${this.dir}`,
      'daemonize no',
      'protected-mode no',
      'save ""',
      'logfile redis.log',
      `appendonly ${options.appendonly ? 'yes' : 'no'}`,
      `appendfsync ${options.appendfsync ?? 'everysec'}`,
      'enable-debug-command local',
      // Replicas sync at once instead of waiting 5 s for more replicas to join the transfer.
      'repl-diskless-sync-delay 0',
      ...(options.cluster
        ? [
            'cluster-enabled yes',
            'cluster-config-file nodes.conf',
            `cluster-port ${busPort}`,
            `cluster-node-timeout ${options.clusterNodeTimeoutMs ?? 1000}`,
          ]
        : []),
      ...(options.config ?? []),
    ];
    writeFileSync(join(this.dir, 'redis.conf'), conf.join('\n') + '\n');
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get state(): ServerState {
    return this.#state;
  }

  /** The process id while the server runs (or is paused). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Start the process and wait until it answers `PING`. */
  async start(): Promise<void> {
    if (this.#state === 'disposed') throw new Error('redis-harness: server was disposed');
    if (this.#child !== undefined) return;
    installExitHook();
    const child = spawn(REDIS_SERVER, [join(this.dir, 'redis.conf')], {
      cwd: this.dir,
      stdio: 'ignore',
    });
    this.#child = child;
    this.#state = 'running';
    live.add(this);
    writeFileSync(
      join(this.dir, OWNER_FILE),
      JSON.stringify({ owner: process.pid, pid: child.pid }),
    );
    this.#exited = new Promise((resolve) => {
      child.once('exit', () => {
        if (this.#child === child) {
          this.#child = undefined;
          if (this.#state !== 'disposed') this.#state = 'stopped';
          live.delete(this);
        }
        resolve();
      });
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (this.#child !== child) {
        throw new Error(`redis-harness: redis-server on ${this.port} exited:\n${this.logTail()}`);
      }
      try {
        if ((await rawCommand(this.port, ['PING'], 1_000)) === 'PONG') return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await this.kill();
        throw new Error(`redis-harness: redis-server on ${this.port} never became ready`);
      }
      await sleep(20);
    }
  }

  /** Send one command (RESP2, over a fresh connection). Error replies are thrown. */
  async command(...args: (string | number)[]): Promise<Reply> {
    const reply = await rawCommand(this.port, args);
    if (reply instanceof ReplyError) throw reply;
    return reply;
  }

  /**
   * Send `commands` pipelined over a fresh connection (RESP2): their replies, in order, error
   * replies among them.
   */
  pipeline(commands: readonly (readonly (string | number)[])[]): Promise<Reply[]> {
    return rawCommands(this.port, commands);
  }

  /** `INFO <section>` as a record of fields. */
  async info(section = 'default'): Promise<Record<string, string>> {
    return parseInfo(String(await this.command('INFO', section)));
  }

  /** SIGKILL: the process dies at once, unsynced data is lost; `restart()` brings it back. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    child.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGSTOP: the process freezes; connections stay open and nothing is answered. */
  pause(): void {
    if (this.#child === undefined) throw new Error('redis-harness: server is not running');
    this.#child.kill('SIGSTOP');
    this.#state = 'paused';
  }

  /** SIGCONT: a paused server carries on, answering what it was sent meanwhile. */
  resume(): void {
    if (this.#child === undefined) throw new Error('redis-harness: server is not running');
    this.#child.kill('SIGCONT');
    this.#state = 'running';
  }

  /** SIGTERM and wait for exit (SIGKILL after 5 s). Redis flushes its AOF on SIGTERM. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await this.#exited;
    clearTimeout(timer);
  }

  /** Stop (if running) and start again on the same port and dir: AOF and `nodes.conf` persist. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Stop for good and delete the temp dir. Idempotent. */
  async dispose(): Promise<void> {
    await this.kill();
    this.#state = 'disposed';
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** @internal For the exit hook: SIGKILL without waiting. */
  killSync(): void {
    try {
      this.#child?.kill('SIGKILL');
    } catch {
      // already gone
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The last lines of the server's log, for error messages. */
  logTail(lines = 20): string {
    try {
      return readFileSync(join(this.dir, 'redis.log'), 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Start a standalone server on a free loopback port. Dispose it in `afterAll`. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  return startServer({ ...options, cluster: false });
}

/** @internal Start one server, retrying on another port if the one picked was taken meanwhile. */
export async function startServer(options: RedisServerOptions): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const busPort = options.cluster ? await freePort() : undefined;
    const server = new RedisServer(port, busPort, options);
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.dispose();
      if (attempt >= 3) throw error;
    }
  }
}

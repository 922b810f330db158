/**
 * Spawn worker processes (`tsx --conditions=@hookgate/source src/worker.ts`, from the repo
 * root) and stop them by pid. tsx runs the worker in a child process of its own, so the worker
 * reports its real pid, and every signal goes to that pid (then to tsx).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ReceiverStats } from './receiver.js';

/** ioredis as configured by default, ioredis with `enableAutoPipelining`, or node-redis 6. */
export type RedisClientKind = 'ioredis' | 'ioredis-pipelined' | 'node-redis';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TSX = `${ROOT}node_modules/.bin/tsx`;
const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** Every worker still alive, SIGKILLed when the test process exits however it exits. */
const live = new Set<Worker>();
process.once('exit', () => {
  for (const worker of live) worker.killSync();
});

export interface WorkerEnv {
  /** `redis://…` of a standalone server, or… */
  redis?: string;
  /** …the startup nodes of a cluster, or… */
  cluster?: { host: string; port: number }[];
  /** …a PostgreSQL server (`postgres://…`) and the store's table in it. */
  postgres?: { url: string; table: string };
  /** The Redis client the store runs on. @default 'ioredis' */
  client?: RedisClientKind;
  table: string;
  namespace: string;
  secret: string;
  name: string;
  claimTtlMs?: number;
  timeoutMs?: number;
  heartbeat?: boolean;
  sequence?: boolean;
  /** No gate: the control experiment. */
  naive?: boolean;
}

export class Worker {
  readonly name: string;
  readonly port: number;
  /** The worker's own pid (not tsx's). */
  readonly pid: number;
  readonly #tsx: ChildProcess;
  readonly #exited: Promise<void>;
  #stderr: string;

  constructor(name: string, port: number, pid: number, tsx: ChildProcess, stderr: () => string) {
    this.name = name;
    this.port = port;
    this.pid = pid;
    this.#tsx = tsx;
    this.#stderr = '';
    this.#exited = new Promise((resolve) => {
      if (tsx.exitCode !== null || tsx.signalCode !== null) resolve();
      else tsx.once('exit', () => resolve());
    });
    tsx.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString()).slice(-4000);
    });
    this.#stderr = stderr();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/webhooks`;
  }

  get alive(): boolean {
    return live.has(this);
  }

  /** The last of what the worker wrote on stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  async stats(): Promise<ReceiverStats> {
    const res = await fetch(`http://127.0.0.1:${this.port}/stats`, {
      signal: AbortSignal.timeout(5_000),
    });
    return (await res.json()) as ReceiverStats;
  }

  /** SIGKILL the worker (a crash), and wait until tsx has gone too. */
  async kill(): Promise<void> {
    this.killSync();
    await this.#exited;
  }

  /** SIGTERM, SIGKILL after 3 s. */
  async stop(): Promise<void> {
    if (!live.has(this)) return;
    signal(this.pid, 'SIGTERM');
    const timer = setTimeout(() => this.killSync(), 3_000);
    await this.#exited;
    clearTimeout(timer);
    live.delete(this);
  }

  killSync(): void {
    live.delete(this);
    signal(this.pid, 'SIGKILL');
    if (this.#tsx.pid !== undefined) signal(this.#tsx.pid, 'SIGKILL');
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Start one worker and wait until it listens. */
export function spawnWorker(env: WorkerEnv): Promise<Worker> {
  const tsx = spawn(TSX, ['--conditions=@hookgate/source', WORKER], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      HOOKGATE_REDIS: env.redis ?? '',
      HOOKGATE_CLUSTER: env.cluster?.map((n) => `${n.host}:${n.port}`).join(',') ?? '',
      HOOKGATE_POSTGRES: env.postgres?.url ?? '',
      HOOKGATE_CLIENT: env.client ?? 'ioredis',
      HOOKGATE_STORE_TABLE: env.postgres?.table ?? '',
      HOOKGATE_TABLE: env.table,
      HOOKGATE_NAMESPACE: env.namespace,
      HOOKGATE_SECRET: env.secret,
      HOOKGATE_WORKER: env.name,
      HOOKGATE_CLAIM_TTL_MS: String(env.claimTtlMs ?? 3_000),
      HOOKGATE_TIMEOUT_MS: String(env.timeoutMs ?? 500),
      HOOKGATE_HEARTBEAT: env.heartbeat ? '1' : '',
      HOOKGATE_SEQUENCE: env.sequence ? '1' : '',
      HOOKGATE_NAIVE: env.naive ? '1' : '',
    },
  });
  let stderr = '';
  const onStderr = (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  };
  tsx.stderr.on('data', onStderr);
  return new Promise((resolve, reject) => {
    let stdout = '';
    let settled = false;
    const fail = (why: string) => {
      clearTimeout(timer);
      if (tsx.pid !== undefined) signal(tsx.pid, 'SIGKILL');
      reject(new Error(`worker ${env.name} ${why}:\n${stderr}`));
    };
    const timer = setTimeout(() => fail('did not listen within 30 s'), 30_000);
    tsx.once('exit', (code) => fail(`exited (${code})`));
    tsx.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (settled || line === undefined || !stdout.includes('\n')) return;
      settled = true;
      clearTimeout(timer);
      tsx.removeAllListeners('exit');
      tsx.stderr.off('data', onStderr);
      const { port, pid } = JSON.parse(line) as { port: number; pid: number };
      const worker = new Worker(env.name, port, pid, tsx, () => stderr);
      live.add(worker);
      tsx.once('exit', () => live.delete(worker));
      resolve(worker);
    });
  });
}

/** Start `count` workers named `<prefix>-<i>` on the same configuration. */
export function spawnWorkers(
  count: number,
  env: Omit<WorkerEnv, 'name'>,
  prefix = 'w',
): Promise<Worker[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) => spawnWorker({ ...env, name: `${prefix}-${i}` })),
  );
}

/** Stop every worker given, whatever state it is in. */
export async function stopAll(workers: readonly (Worker | undefined)[]): Promise<void> {
  await Promise.all(workers.map((worker) => worker?.stop()));
}

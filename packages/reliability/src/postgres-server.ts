/**
 * A private PostgreSQL server for the fault tests: its own data directory (`initdb`), its own
 * loopback port, stopped and started at will, removed afterwards. Never the shared server on
 * 5432. `initdb` and `pg_ctl` refuse to run as root: as root they run as the `postgres` user,
 * in a directory it owns.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@hookgate/redis-harness';

/** Every server still running, stopped when the test process exits however it exits. */
const running = new Set<PostgresServer>();
process.once('exit', () => {
  for (const server of running) server.stopSync();
});

const asRoot = process.getuid?.() === 0;

/** Where `initdb` and `pg_ctl` are: on PATH, or in Debian's versioned directory. */
const BIN = (() => {
  try {
    execFileSync('/bin/sh', ['-c', 'command -v initdb && command -v pg_ctl'], { stdio: 'pipe' });
    return '';
  } catch {
    const found = execFileSync(
      '/bin/sh',
      ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1'],
      {
        encoding: 'utf8',
      },
    ).trim();
    return found === '' ? '' : `${found}/`;
  }
})();

/** A shell command as the user PostgreSQL runs as. */
function argv(command: string): [string, string[]] {
  return asRoot
    ? ['su', ['postgres', '-s', '/bin/sh', '-c', command]]
    : ['/bin/sh', ['-c', command]];
}

/** Run it without blocking this process (it is the provider of a storm meanwhile). */
async function pgCommand(command: string): Promise<string> {
  const [file, args] = argv(command);
  return (await promisify(execFile)(file, args, { encoding: 'utf8' })).stdout;
}

function pgCommandSync(command: string): string {
  const [file, args] = argv(command);
  return execFileSync(file, args, { encoding: 'utf8', stdio: 'pipe' });
}

export class PostgresServer {
  readonly port: number;
  readonly #dir: string;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.#dir = dir;
  }

  /** `initdb` a fresh cluster (trust auth) and start it on a free loopback port. */
  static async start(): Promise<PostgresServer> {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-pg-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      chownSync(dir, uid, gid);
    }
    await pgCommand(
      `${BIN}initdb -D '${dir}/data' -A trust -U postgres > '${dir}/initdb.log' 2>&1`,
    );
    const server = new PostgresServer(await freePort(), dir);
    await server.resume();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Start the (stopped) server and wait until it accepts connections. */
  async resume(): Promise<void> {
    await pgCommand(
      `${BIN}pg_ctl -D '${this.#dir}/data' -w -t 30 -l '${this.#dir}/log' ` +
        `-o "-p ${this.port} -k '${this.#dir}' -c listen_addresses=127.0.0.1" start > /dev/null`,
    );
    running.add(this);
  }

  /** Stop the server: `immediate` is a crash (no checkpoint), `fast` a clean shutdown. */
  async stop(mode: 'fast' | 'immediate' = 'immediate'): Promise<void> {
    running.delete(this);
    await pgCommand(`${BIN}pg_ctl -D '${this.#dir}/data' -w -m ${mode} stop > /dev/null`);
  }

  stopSync(): void {
    running.delete(this);
    try {
      pgCommandSync(`${BIN}pg_ctl -D '${this.#dir}/data' -m immediate stop > /dev/null 2>&1`);
    } catch {
      // already stopped
    }
  }

  /** Stop the server and remove its directory. */
  async dispose(): Promise<void> {
    this.stopSync();
    rmSync(this.#dir, { recursive: true, force: true });
  }

  /** The last lines of the server's log. */
  logTail(lines = 20): string {
    try {
      return pgCommandSync(`tail -n ${lines} '${this.#dir}/log'`);
    } catch {
      return '';
    }
  }
}

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packages = fileURLToPath(new URL('../..', import.meta.url));
const repository = join(packages, '..');

/** The built binary, run as a user runs it: `node dist/bin.js`. */
export const BIN = join(packages, 'cli', 'dist', 'bin.js');

/** The workspace packages the binary loads at run time, from their `dist/`. */
const DEPENDENCIES = ['core', 'redis-core', 'ioredis', 'pg'];

function newest(dir: string): number {
  return readdirSync(dir, { recursive: true })
    .map((file) => statSync(join(dir, String(file))))
    .filter((stat) => stat.isFile())
    .reduce((latest, stat) => Math.max(latest, stat.mtimeMs), 0);
}

/** Whether `packages/<name>` has no build, or one older than its sources. */
function stale(name: string): boolean {
  const built = join(packages, name, 'dist', 'index.js');
  return !existsSync(built) || statSync(built).mtimeMs < newest(join(packages, name, 'src'));
}

/**
 * Build the CLI, and the workspace packages it imports when their build is missing or stale
 * (`pnpm build` at the root has built them all in CI), as `pnpm build` does.
 */
export function build(): void {
  const filters = DEPENDENCIES.filter(stale).flatMap((name) => ['--filter', `@hookgate/${name}`]);
  const pnpm = (args: string[]) =>
    execFileSync('pnpm', args, { cwd: repository, stdio: 'pipe', encoding: 'utf8' });
  if (filters.length > 0) pnpm([...filters, 'run', 'build']);
  pnpm(['--filter', '@hookgate/cli', 'run', 'build']);
}

/** How a run of the binary ended. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall-clock time of the run, in ms. */
  ms: number;
}

/**
 * Run `hookgate args` as a child process and wait for it to exit; its stdin is a pipe (not a
 * terminal) that gets `input` and is closed. Killed (SIGKILL, by pid) after `killAfterMs`.
 */
export function hookgate(
  args: string[],
  options: { input?: string; killAfterMs?: number } = {},
): Promise<Run> {
  return runChild(process.execPath, [BIN, ...args], options);
}

/**
 * Run `hookgate args` on a pseudo-terminal (util-linux `script`), typing `input` at it:
 * stdin is a terminal there. The output is the terminal's, prompts included.
 */
export function hookgateOnTerminal(args: string[], input: string): Promise<Run> {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  return runChild('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    input,
  });
}

function runChild(
  file: string,
  args: string[],
  options: { input?: string; killAfterMs?: number },
): Promise<Run> {
  return startChild(file, args, options).exited;
}

/** A child process of the binary, with its output so far. */
interface Child {
  readonly pid: number | undefined;
  stdout(): string;
  stderr(): string;
  /** Close the read end of its stdout pipe, as `head` does once it has read enough. */
  closeStdout(): void;
  readonly exited: Promise<Run>;
}

function startChild(
  file: string,
  args: string[],
  options: { input?: string; killAfterMs?: number },
): Child {
  const { input = '', killAfterMs = 20_000 } = options;
  const started = performance.now();
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.end(input);
  const timer = setTimeout(() => {
    if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  }, killAfterMs);
  const exited = new Promise<Run>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
  return {
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    closeStdout: () => child.stdout.destroy(),
    exited,
  };
}

/** A `hookgate` that runs until it is stopped (`watch`), with its output so far. */
export interface Running {
  /** The complete lines it printed on stdout so far. */
  lines(): string[];
  /** What it printed on stderr so far. */
  stderr(): string;
  /**
   * Resolves once `ready()` is true (checked every 20 ms); rejects after `ms`, or when the
   * process exits first, with what it printed.
   */
  until(ready: () => boolean, ms?: number): Promise<void>;
  /** Close the read end of its stdout: its next write finds no reader (EPIPE). */
  closeStdout(): void;
  /** Send `signal` to it (by pid) and wait for its exit. */
  stop(signal: NodeJS.Signals): Promise<Run>;
  /** Settles when the process exits. */
  readonly exited: Promise<Run>;
}

/** Start `hookgate args` without waiting for it; SIGKILLed (by pid) after `killAfterMs`. */
export function hookgateRunning(args: string[], killAfterMs = 60_000): Running {
  const child = startChild(process.execPath, [BIN, ...args], { killAfterMs });
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  const lines = () => child.stdout().split('\n').slice(0, -1);
  return {
    lines,
    stderr: child.stderr,
    closeStdout: child.closeStdout,
    exited: child.exited,
    async until(ready, ms = 10_000) {
      const deadline = performance.now() + ms;
      while (!ready()) {
        if (exited || performance.now() > deadline) {
          const why = exited ? 'it exited' : `not within ${ms} ms`;
          throw new Error(
            `hookgate ${args.join(' ')}: ${why}\nstdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stop(signal) {
      if (!exited && child.pid !== undefined) process.kill(child.pid, signal);
      return child.exited;
    },
  };
}

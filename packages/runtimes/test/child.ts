import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Served } from './suite.js';

const require = createRequire(import.meta.url);

/**
 * The native binary that the `bun` or `deno` npm package ships in its platform package
 * (`@oven/bun-linux-x64`, `@deno/linux-x64-glibc`, …). Their `node_modules/.bin` shims cannot
 * be used here: pnpm does not run the wrappers' postinstall scripts (pnpm-workspace.yaml sets
 * `allowBuilds` to false for both), so `bun`'s shim is a script that prints "Bun's postinstall
 * script was not run" and exits 1, and `deno`'s is a Node script that would install the binary
 * into node_modules on first use and then run it as a grandchild, out of reach of a kill by pid.
 */
export function runtimeBinary(runtime: 'bun' | 'deno'): string {
  const { platform, arch } = process;
  const [wrapper, name, file] =
    runtime === 'bun'
      ? ['bun', `@oven/bun-${platform}-${arch === 'arm64' ? 'aarch64' : arch}`, 'bin/bun']
      : ['deno', `@deno/${platform}-${arch}${platform === 'linux' ? '-glibc' : ''}`, 'deno'];
  // The platform package is the wrapper's optional dependency: resolve it from the wrapper.
  const fromWrapper = createRequire(require.resolve(`${wrapper}/package.json`));
  const binary = join(dirname(fromWrapper.resolve(`${name}/package.json`)), file);
  if (!existsSync(binary)) throw new Error(`${runtime}: no binary at ${binary}`);
  return binary;
}

/** What a served entry prints first on stdout: the port it listens on. */
const LISTENING = /\{"port":(\d+)\}/;

/**
 * Runs `binary args` in `cwd` until it prints `{"port":N}` on stdout (bounded by `startMs`),
 * and serves requests to `http://127.0.0.1:N`. `close()` ends the child by its pid.
 */
export async function serveChild(
  name: string,
  binary: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; startMs?: number },
): Promise<Served> {
  const { cwd, env, startMs = 15_000 } = options;
  // stdin stays a pipe: the entries exit when it closes, so a crashed test run leaves no server.
  const child = spawn(binary, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(child.pid, 'SIGTERM');
    if (await settlesWithin(exited, 5_000)) return;
    process.kill(child.pid, 'SIGKILL');
    await settlesWithin(exited, 5_000);
  };

  const port = await new Promise<number>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${name} ${why}\nstdout: ${stdout}\nstderr: ${stderr}`));
    };
    const timer = setTimeout(() => fail(`printed no port within ${startMs} ms`), startMs);
    child.stdout.on('data', () => {
      const match = LISTENING.exec(stdout);
      if (match === null) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    });
    child.once('error', (error) => fail(`did not start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before listening`));
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });

  const base = `http://127.0.0.1:${port}`;
  return {
    request: (path, init) => fetch(new URL(path, base), init),
    close: stop,
    output: () => `stdout: ${stdout}\nstderr: ${stderr}`,
  };
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([promise.then(() => true as const), timeout]);
  clearTimeout(timer);
  return settled;
}

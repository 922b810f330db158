import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { rawCommand, startRedis } from '../src/index.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

it('kills the servers of a test process that was itself SIGKILLed, on the next start', async () => {
  // A child process starts a server, reports it, and is SIGKILLed: its exit hook never runs.
  const child = spawn(
    process.execPath,
    [
      '--conditions=@hookgate/source',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { startRedis } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))};
       const r = await startRedis();
       console.log(JSON.stringify({ port: r.port, dir: r.dir }));
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const { port, dir } = await new Promise<{ port: number; dir: string }>((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(String(chunk))));
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  expect(await rawCommand(port, ['PING'])).toBe('PONG');

  // The next harness start in another process reaps it.
  const next = await startRedis();
  await next.dispose();
  await sleep(100);
  await expect(rawCommand(port, ['PING'], 500)).rejects.toThrow();
  expect(existsSync(dir)).toBe(false);
});

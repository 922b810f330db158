import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type RedisServer, startRedis } from '@hookgate/redis-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

/** Run `pnpm demo` the way the README does, as a child process, and collect what it prints. */
function runDemo(env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = execFile(
      tsx,
      ['--conditions=@hookgate/source', 'examples/demo.ts'],
      { cwd: root, env: { ...process.env, REDIS_URL: '', ...env }, timeout: 60_000 },
      (_error, stdout) => resolve({ code: child.exitCode, stdout }),
    );
  });
}

describe('pnpm demo', () => {
  it('storms a real HTTP receiver and every event is applied exactly once (memory store)', async () => {
    const { code, stdout } = await runDemo();
    expect(stdout).toContain('in-memory store');
    expect(stdout).toMatch(/ok {2}evt-2 {3}deliveries {2}5 .* applied 1/);
    expect(stdout).toMatch(/ok {2}evt-3 .* applied 0 \(stale/);
    expect(stdout).toMatch(/ok {2}evt-5 .*500→200.* applied 1/);
    expect(stdout).toMatch(/ok {2}legacy .* applied 1/);
    expect(stdout).toContain('every event applied exactly once');
    expect(stdout).not.toContain('BAD');
    expect(code).toBe(0);
  });

  describe('with REDIS_URL', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(() => redis?.dispose());

    it('runs the same storm on Redis, every event applied exactly once', async () => {
      const { code, stdout } = await runDemo({ REDIS_URL: `redis://127.0.0.1:${redis.port}` });
      expect(stdout).toContain(`Redis at redis://127.0.0.1:${redis.port}`);
      expect(stdout).toMatch(/ok {2}evt-2 {3}deliveries {2}5 .* applied 1/);
      expect(stdout).toMatch(/ok {2}evt-5 .*500→200.* applied 1/);
      expect(stdout).toContain('every event applied exactly once');
      expect(code).toBe(0);
      // The demo's records are in this server, under its namespace.
      const keys = String(await redis.command('KEYS', 'demo-*'));
      expect(keys).toContain(':evt:evt-1');
    });
  });
});

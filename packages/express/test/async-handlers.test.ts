import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// What docs/frameworks/express.md says about a rejected async handler, on each major, in a
// real child process (the only place a crash can be observed).
const fixture = fileURLToPath(new URL('./fixtures/async-reject.mjs', import.meta.url));
const run = (major: '4' | '5') =>
  spawnSync(process.execPath, [fixture, major], { encoding: 'utf8', timeout: 20_000 });

describe('a rejected async route handler', () => {
  it('on Express 4 is an unhandled rejection: the process exits with code 1, unanswered', () => {
    const child = run('4');
    expect(child.status).toBe(1);
    expect(child.stderr).toContain('handler failed');
    expect(child.stdout).not.toContain('status');
  });

  it('on Express 5 answers 500, and the process lives on', () => {
    const child = run('5');
    expect(child.status).toBe(0);
    expect(child.stdout).toContain('status 500');
  });
});

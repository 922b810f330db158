import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Deadlines, scripts } from '../src/index.js';

describe('scripts', () => {
  it.each(Object.entries(scripts))(
    '%s is known to EVALSHA by the SHA1 of its text',
    (_name, script) => {
      expect(script.sha).toBe(createHash('sha1').update(script.lua).digest('hex'));
    },
  );

  it.each(Object.entries(scripts))(
    '%s opens with its KEYS, ARGV and Returns, and touches one key',
    (_name, script) => {
      expect(script.lua).toMatch(/^-- \S+-1: /);
      expect(script.lua).toContain('-- KEYS[1]');
      expect(script.lua).toContain('-- Returns');
      expect(script.lua).not.toMatch(/KEYS\[2\]/);
      // Lua booleans read differently under RESP2 and RESP3: integers only.
      expect(script.lua).not.toMatch(/return (true|false)/);
    },
  );
});

describe('Deadlines', () => {
  it('passes answers and errors through when they come in time', async () => {
    const deadlines = new Deadlines(1000);
    await expect(deadlines.guard(Promise.resolve('ok'))).resolves.toBe('ok');
    await expect(deadlines.guard(Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(deadlines.pending).toBe(0);
  });

  it('rejects with a TimeoutError soon after the deadline, and ignores the late answer', async () => {
    const deadlines = new Deadlines(100);
    let answer!: (value: string) => void;
    const started = performance.now();
    const guarded = deadlines.guard(new Promise<string>((resolve) => (answer = resolve)));
    const error = await guarded.catch((e: unknown) => e);
    const waited = performance.now() - started;
    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(waited).toBeGreaterThanOrEqual(99);
    expect(waited).toBeLessThan(1000);
    answer('late');
    expect(deadlines.pending).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { Deadlines } from '../src/index.js';

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

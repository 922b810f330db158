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

  it('start and finish: an operation answered in time finishes once; one past its deadline expires', async () => {
    const deadlines = new Deadlines(20);
    const expired: unknown[] = [];
    const early = deadlines.start((timeout) => expired.push(['early', timeout]));
    const late = deadlines.start((timeout) => expired.push(['late', timeout]));
    const middle = deadlines.start((timeout) => expired.push(['middle', timeout]));
    expect(deadlines.pending).toBe(3);
    expect(deadlines.finish(middle)).toBe(true); // out of order: any pending one can finish
    expect(deadlines.finish(middle)).toBe(false);
    expect(deadlines.finish(early)).toBe(true);
    expect(deadlines.pending).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(expired).toEqual([['late', expect.objectContaining({ name: 'TimeoutError' })]]);
    expect(deadlines.finish(late)).toBe(false);
    expect(deadlines.pending).toBe(0);
  });
});

/**
 * The two SHA-256 paths agree: Node's native hash (what Node, Bun and Deno use) and the pure
 * implementation every other runtime uses, so one payload gets one `dig:` key everywhere.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { portable, sha256 } from '../src/sha256.js';

const native = (text: string) => createHash('sha256').update(text).digest('hex');

describe('sha256', () => {
  it('takes the native path on Node', () => {
    expect(sha256).not.toBe(portable);
  });

  it('matches the published test vectors on both paths', () => {
    for (const hash of [sha256, portable]) {
      expect(hash('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      expect(hash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    }
  });

  it('gives the same hex on both paths for any text, lone surrogates and astral characters included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        expect(portable(text)).toBe(native(text));
        expect(sha256(text)).toBe(native(text));
      }),
      { numRuns: 500 },
    );
    const long = 'ü€😀'.repeat(50_000);
    expect(portable(long)).toBe(native(long));
  });
});

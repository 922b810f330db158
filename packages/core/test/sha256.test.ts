/**
 * The two SHA-256 paths agree: Node's native hash (what Node, Bun and Deno use) and the pure
 * implementation every other runtime uses, so one payload gets one `dig:` key everywhere.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/canonical-json.js';
import { digestOf } from '../src/key.js';
import {
  portable,
  portableBytes,
  portableStream,
  sha256,
  sha256Bytes,
  sha256Stream,
} from '../src/sha256.js';

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

  it('gives the same hex on both paths for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const expected = createHash('sha256').update(bytes).digest('hex');
        expect(portableBytes(bytes)).toBe(expected);
        expect(sha256Bytes(bytes)).toBe(expected);
      }),
    );
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

describe('sha256 in pieces', () => {
  it('hashes pieces as their concatenation on both paths', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 200 }), { maxLength: 8 }),
        (pieces) => {
          for (const stream of [sha256Stream(), portableStream()]) {
            for (const piece of pieces) stream.update(piece);
            expect(stream.hex()).toBe(native(pieces.join('')));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('digests a payload written in many pieces as the hash of its whole canonical JSON', () => {
    // Well past the writer's 16 K piece size, with astral and non-ASCII text across pieces.
    const items = Array.from({ length: 3000 }, (_, i) => ({
      z: `ü${i}😀`,
      a: i,
      m: { y: null, b: [i] },
    }));
    const payload = { items, id: 'x' };
    const json = canonicalJson(payload);
    expect(json.length).toBeGreaterThan(100_000);
    expect(digestOf(payload)).toBe(native(json));
    const small = { b: 1, a: 'ü' };
    expect(digestOf(small)).toBe(native('{"a":"ü","b":1}'));
  });
});

/**
 * Owner tokens: 52 random bits written as a 16-digit decimal number (2^52 to 2^53 - 1, so never
 * a leading zero). A done record can then be the bare token, which Redis keeps as an integer
 * inside its object header instead of a separate string: 46 bytes less per done record than a
 * UUID (measured in docs/capacity.md). 52 bits are plenty to tell two owners of one key apart.
 *
 * The randomness comes from Web Crypto, drawn 512 tokens at a time (a call per token cost more
 * than the rest of a claim), so the module needs no `node:` import.
 */
const BATCH = 512;
const words = new Uint32Array(BATCH * 2);
let next = BATCH;

/** @internal A fresh owner token: 16 decimal digits. */
export function ownerToken(): string {
  if (next === BATCH) {
    globalThis.crypto.getRandomValues(words);
    next = 0;
  }
  const high = words[next * 2]! & 0xfffff; // 20 bits
  const low = words[next * 2 + 1]!; // 32 bits
  next++;
  return decimal16(2 ** 52 + high * 2 ** 32 + low);
}

const char = String.fromCharCode;

/**
 * @internal `String(value)` for an integer of 16 digits, three times as fast: `String` of a
 * number past 2^31 takes the double-to-string path (and fills the number-string cache), which
 * was a fifth of the gate's own time per claim. Two halves of 8 digits, in int32 arithmetic,
 * written in one flat string.
 */
export function decimal16(value: number): string {
  const upper = Math.floor(value / 1e8);
  let a = upper | 0;
  let b = (value - upper * 1e8) | 0;
  const a7 = a % 10;
  a = (a / 10) | 0;
  const a6 = a % 10;
  a = (a / 10) | 0;
  const a5 = a % 10;
  a = (a / 10) | 0;
  const a4 = a % 10;
  a = (a / 10) | 0;
  const a3 = a % 10;
  a = (a / 10) | 0;
  const a2 = a % 10;
  a = (a / 10) | 0;
  const a1 = a % 10;
  a = (a / 10) | 0;
  const b7 = b % 10;
  b = (b / 10) | 0;
  const b6 = b % 10;
  b = (b / 10) | 0;
  const b5 = b % 10;
  b = (b / 10) | 0;
  const b4 = b % 10;
  b = (b / 10) | 0;
  const b3 = b % 10;
  b = (b / 10) | 0;
  const b2 = b % 10;
  b = (b / 10) | 0;
  const b1 = b % 10;
  b = (b / 10) | 0;
  return char(
    48 + a,
    48 + a1,
    48 + a2,
    48 + a3,
    48 + a4,
    48 + a5,
    48 + a6,
    48 + a7,
    48 + b,
    48 + b1,
    48 + b2,
    48 + b3,
    48 + b4,
    48 + b5,
    48 + b6,
    48 + b7,
  );
}

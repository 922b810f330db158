/**
 * Owner tokens: 52 random bits written as a 16-digit decimal number (2^52 to 2^53 - 1, so never
 * a leading zero). A done record can then be the bare token, which Redis keeps as an integer
 * inside its object header instead of a separate string: 48 bytes less per done record than a
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
  return String(2 ** 52 + high * 2 ** 32 + low);
}

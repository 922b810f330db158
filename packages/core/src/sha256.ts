/**
 * SHA-256 as hex, synchronously, on every runtime. Node (and Bun and Deno, which implement
 * `process.getBuiltinModule`) hash natively through `node:crypto`, reached at run time so that
 * no bundler meets a `node:` import; elsewhere (browsers, Cloudflare's workerd without
 * `nodejs_compat`) the audited pure implementation of `@noble/hashes` does it. Web Crypto has
 * only an asynchronous digest, and key derivation is synchronous.
 */
import { sha256 as portableSha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

interface NodeHash {
  update(data: string | Uint8Array): NodeHash;
  digest(encoding: 'hex'): string;
}

interface NodeCrypto {
  createHash(algorithm: 'sha256'): NodeHash;
  /** One-shot hashing (Node 20.12+, 21.7+): no Hash object per call. */
  hash?(algorithm: 'sha256', data: string, encoding: 'hex'): string;
}

const builtin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  ?.getBuiltinModule;
const nodeCrypto = builtin?.('node:crypto') as NodeCrypto | undefined;

/** @internal The SHA-256 of a string's UTF-8 bytes, as 64 lowercase hex characters. */
export const sha256: (text: string) => string =
  nodeCrypto === undefined
    ? portable
    : typeof nodeCrypto.hash === 'function'
      ? (text) => nodeCrypto.hash!('sha256', text, 'hex')
      : (text) => nodeCrypto.createHash('sha256').update(text).digest('hex');

/** @internal The pure implementation, exported for the tests that compare the two. */
export function portable(text: string): string {
  return bytesToHex(portableSha256(utf8ToBytes(text)));
}

/** @internal The SHA-256 of bytes, as 64 lowercase hex characters. */
export function sha256Bytes(bytes: Uint8Array): string {
  return nodeCrypto === undefined
    ? portableBytes(bytes)
    : nodeCrypto.createHash('sha256').update(bytes).digest('hex');
}

/** @internal The pure implementation of {@link sha256Bytes}, for the tests. */
export function portableBytes(bytes: Uint8Array): string {
  return bytesToHex(portableSha256(bytes));
}

/** @internal SHA-256 over text given in pieces: the hash of their concatenation. */
export interface Sha256Stream {
  update(text: string): void;
  /** The hash as 64 lowercase hex characters; the stream is done after it. */
  hex(): string;
}

/** @internal A {@link Sha256Stream}, native where {@link sha256} is. */
export function sha256Stream(): Sha256Stream {
  if (nodeCrypto === undefined) return portableStream();
  const hash = nodeCrypto.createHash('sha256');
  return { update: (text) => void hash.update(text), hex: () => hash.digest('hex') };
}

/** @internal The pure stream, exported for the tests that compare the two. */
export function portableStream(): Sha256Stream {
  const hash = portableSha256.create();
  return {
    update: (text) => void hash.update(utf8ToBytes(text)),
    hex: () => bytesToHex(hash.digest()),
  };
}

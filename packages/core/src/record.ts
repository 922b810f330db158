import type { StoredRecord } from './store.js';

const ALL_DIGITS = /^\d+$/;
// `s`: `.` matches line terminators too, as Lua's `.` (the Redis scripts') matches any byte.
const CLAIM = /^([pd]):([^:]+)(?::(.+))?$/s;
const HELD_WATERMARK = /^h:\d+:[^:]+:(-?\d+):(.+)$/s;
const WATERMARK = /^(-?\d+):(.+)$/s;

/**
 * For store authors: read a value in the reference encoding (the one the Redis adapters and
 * `MemoryStore` write; see {@link ClaimStore}): `p:<token>` or `d:<token>` with an optional
 * `:<fingerprint>`, a done record's bare all-digit token, a watermark `<at>:<eventKey>`, or a
 * held watermark `h:<holdUntil>:<holder>:<at>:<eventKey>`.
 * @returns the record (without `ttlMs`), or `undefined` for a value hookgate did not write.
 */
export function parseRecord(value: string): Exclude<StoredRecord, { kind: 'absent' }> | undefined {
  if (ALL_DIGITS.test(value)) return { kind: 'done', token: value };
  const claim = CLAIM.exec(value);
  if (claim !== null) {
    const [, kind, token, fingerprint] = claim;
    return {
      kind: kind === 'p' ? 'processing' : 'done',
      token: token!,
      ...(fingerprint === undefined ? {} : { fingerprint }),
    };
  }
  const mark = HELD_WATERMARK.exec(value) ?? WATERMARK.exec(value);
  if (mark === null) return undefined;
  return { kind: 'watermark', at: Number(mark[1]), eventKey: mark[2]! };
}

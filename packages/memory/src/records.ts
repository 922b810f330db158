/** The values `MemoryStore` keeps, in the reference encoding the Redis adapters write. */

/**
 * A claim record, encoded as the Redis adapters encode it: `p:<token>` (processing) or
 * `d:<token>` (done), followed by `:<fingerprint>` when the claim carries one; a done record of
 * an all-digit token without a fingerprint is the bare token.
 */
export function claimRecord(
  kind: 'p:' | 'd:',
  token: string,
  fingerprint: string | undefined,
): string {
  if (fingerprint !== undefined) return kind + token + ':' + fingerprint;
  return kind === 'd:' && isDigits(token) ? token : kind + token;
}

/** `/^\d+$/.test(text)`, without the regular expression (it runs on every done). */
function isDigits(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/** `p` or `d`; `undefined` for a value that is not a claim record (`p:` has no token: none). */
export function recordKind(value: string): 'p' | 'd' | undefined {
  if (value.charCodeAt(1) !== 58 /* : */) return isDigits(value) ? 'd' : undefined;
  if (value.length === 2 || value.charCodeAt(2) === 58) return undefined; // an empty token
  const kind = value.charCodeAt(0);
  return kind === 112 /* p */ ? 'p' : kind === 100 /* d */ ? 'd' : undefined;
}

/** Whether the record's token is `token`, compared in place. */
export function ownedBy(value: string, token: string): boolean {
  if (value.charCodeAt(1) !== 58 /* : */) return value === token; // a bare done token
  const end = token.length + 2;
  return value.startsWith(token, 2) && (value.length === end || value.charCodeAt(end) === 58);
}

export function fingerprintOf(value: string): string | undefined {
  if (value.charCodeAt(1) !== 58 /* : */) return undefined;
  const colon = value.indexOf(':', 2);
  return colon < 0 ? undefined : value.slice(colon + 1);
}

/**
 * A subject's watermark, encoded as the Redis adapters encode it: `<at>:<eventKey>`, or, while
 * an event holds the subject, `h:<holdUntil>:<holder>:<at>:<eventKey>`.
 */
export interface Watermark {
  at: number;
  eventKey: string;
  holder: string | undefined;
  holdUntil: number;
}

const WATERMARK = /^(?:h:(\d+):([^:]+):)?(-?\d+):(.+)$/s;

export function parseWatermark(value: string): Watermark | undefined {
  const match = WATERMARK.exec(value);
  if (match === null) return undefined;
  return {
    at: Number(match[3]),
    eventKey: match[4]!,
    holder: match[2],
    holdUntil: match[1] === undefined ? 0 : Number(match[1]),
  };
}

export function held(until: number, token: string, at: number, eventKey: string): string {
  return `h:${until}:${token}:${at}:${eventKey}`;
}

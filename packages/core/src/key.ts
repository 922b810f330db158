import { writeCanonicalJson } from './canonical-json.js';
import { HookgateError, InvalidDeliveryError, invalidOption, messageOf } from './errors.js';
import type { Preset } from './providers.js';
import { type CompiledSelector, compileSelector } from './select.js';
import { type Sha256Stream, sha256, sha256Bytes, sha256Stream } from './sha256.js';
import type { Delivery, KeySource, Selector } from './types.js';

/**
 * Ids (and subjects) of up to 128 of these characters (`[\w.:@/+=-]`) are stored as they are;
 * anything else is hashed. A table rather than a regular expression: it is read per delivery.
 */
const PLAIN = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:@/+=-') {
  PLAIN[c.charCodeAt(0)] = 1;
}

function isPlainId(id: string): boolean {
  const { length } = id;
  if (length === 0 || length > 128) return false;
  for (let i = 0; i < length; i++) {
    const code = id.charCodeAt(i);
    if (code >= 128 || PLAIN[code] === 0) return false;
  }
  return true;
}

/** Options of {@link deriveKey}; the same fields as on `createGate`. */
export interface KeyOptions {
  /** A provider preset whose `eventId` and `digestFallback` apply unless given here. */
  provider?: Preset;
  /** Where the event id lives; an array is tried in order. Without one, the key is a digest. */
  eventId?: Selector | readonly Selector[];
  /**
   * Key deliveries without an event id by the SHA-256 of their canonical JSON. When `false`,
   * such a delivery is invalid.
   * @default the preset's, else true
   */
  digestFallback?: boolean;
}

/** A derived idempotency key. */
export interface DerivedKey {
  /**
   * `evt:<id>` for an event id (`evt:#<sha256 hex>` for one that is not plain), `dig:<sha256
   * hex>` for a digest.
   */
  key: string;
  /** How `key` was derived. */
  source: KeySource;
}

/** @internal A compiled key derivation, built once per gate. */
export interface KeyDeriver {
  selectors: readonly CompiledSelector[];
  digestFallback: boolean;
}

/** @internal */
export function compileKeyOptions(options: KeyOptions): KeyDeriver {
  const eventId = options.eventId ?? options.provider?.eventId;
  const selectors = eventId === undefined ? [] : Array.isArray(eventId) ? eventId : [eventId];
  if (Array.isArray(eventId) && eventId.length === 0) {
    invalidOption('eventId', 'must not be an empty array');
  }
  const digestFallback = options.digestFallback ?? options.provider?.digestFallback ?? true;
  if (typeof digestFallback !== 'boolean') invalidOption('digestFallback', 'must be a boolean');
  return {
    selectors: selectors.map((s: Selector, i: number) =>
      compileSelector(s, selectors.length > 1 ? `eventId[${i}]` : 'eventId'),
    ),
    digestFallback,
  };
}

/**
 * Derive the idempotency key of a delivery: the provider's event id when a selector finds one
 * (`evt:<id>`), otherwise the SHA-256 of the payload's canonical JSON (`dig:<hex>`).
 *
 * An id is a string with non-blank content (trimmed) or a safe integer. Ids up to 128
 * characters of letters, digits and `_ . : @ / + = -` are kept as they are; any other id
 * (too long, control characters, spaces, …) is hashed, as `evt:#<sha256 hex>`.
 *
 * @throws InvalidDeliveryError `missing-id` when there is no id and `digestFallback` is off,
 * or an `eventId` function selector threw; `not-json` when the payload must be parsed or digested and is not JSON.
 * @throws HookgateError `INVALID_OPTIONS` for a bad option (a selector, an empty `eventId`
 * array, a `digestFallback` that is not a boolean).
 */
export function deriveKey(delivery: Delivery, options: KeyOptions = {}): DerivedKey {
  const deriver = compileKeyOptions(options);
  try {
    const payload = payloadOf(delivery);
    return keyOf(deriver, payload, withPayload(delivery, payload));
  } catch (error) {
    throw unreadable(error);
  }
}

/**
 * @internal An error met while reading a delivery, as the delivery's fault: an
 * `InvalidDeliveryError` stays as it is; anything else (a getter or `toJSON` that throws, even
 * `null`) becomes one with reason `not-json`.
 */
export function unreadable(error: unknown): unknown {
  if (error instanceof HookgateError) return error;
  return new InvalidDeliveryError('not-json', `payload could not be read: ${messageOf(error)}`, {
    cause: error,
  });
}

/** @internal */
export function keyOf(deriver: KeyDeriver, payload: unknown, delivery: Delivery): DerivedKey {
  for (const select of deriver.selectors) {
    const id = idString(select(payload, delivery));
    if (id !== undefined) return { key: 'evt:' + plainOrHashed(id), source: 'event-id' };
  }
  if (!deriver.digestFallback) {
    throw new InvalidDeliveryError(
      'missing-id',
      'delivery has no event id and digestFallback is off',
    );
  }
  return { key: 'dig:' + digestOf(payload), source: 'digest' };
}

/**
 * @internal The SHA-256 hex of a payload's canonical JSON (RFC 8785): equal for re-serialized
 * copies of one payload.
 * @throws InvalidDeliveryError `not-json` when the payload is not JSON.
 */
export function digestOf(payload: unknown): string {
  // A small payload is hashed in one call; a large one in pieces as its text is written.
  let stream: Sha256Stream | undefined;
  let rest: string;
  try {
    rest = writeCanonicalJson(payload, (piece) => {
      stream ??= sha256Stream();
      stream.update(piece);
    });
  } catch (error) {
    throw new InvalidDeliveryError('not-json', `payload is not JSON: ${messageOf(error)}`, {
      cause: error,
    });
  }
  if (stream === undefined) return sha256(rest);
  stream.update(rest);
  return stream.hex();
}

/** @internal An id or subject value as a string: non-blank trimmed text, or a safe integer. */
export function idString(value: unknown): string | undefined {
  if (typeof value === 'string') {
    const text = value.trim();
    return text === '' ? undefined : text;
  }
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * @internal Whether `key` is an event key as the gate makes them: `evt:<plain id>`,
 * `evt:#<sha256 hex>` or `dig:<sha256 hex>` (so it is safe to use in a store key as it is).
 */
export function isEventKey(key: string): boolean {
  if (key.startsWith('dig:')) return HEX64.test(key.slice(4));
  if (!key.startsWith('evt:')) return false;
  const id = key.slice(4);
  return id.startsWith('#') ? HEX64.test(id.slice(1)) : isPlainId(id);
}

/**
 * @internal Untrusted text made safe to be part of a store key: kept as it is when it is a
 * plain id (up to 128 characters of letters, digits and `_ . : @ / + = -`), else `#<sha256>`:
 * of its UTF-8 bytes; or, for text with a lone surrogate (which UTF-8 cannot encode, and would
 * turn into U+FFFD, so that `"\ud800"` and `"\udfff"` shared a key), of a byte 0xFF (never in
 * UTF-8) and its UTF-16 code units.
 */
export function plainOrHashed(id: string): string {
  if (isPlainId(id)) return id;
  return '#' + (LONE_SURROGATE.test(id) ? sha256Bytes(codeUnits(id)) : sha256(id));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** 0xFF, then each UTF-16 code unit of `text`, big-endian. */
function codeUnits(text: string): Uint8Array {
  const bytes = new Uint8Array(1 + 2 * text.length);
  bytes[0] = 0xff;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    bytes[1 + 2 * i] = unit >> 8;
    bytes[2 + 2 * i] = unit & 0xff;
  }
  return bytes;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * @internal `delivery` with `payload` filled in when only `rawBody` came (what function
 * selectors and `gate.run`'s handler see). Its fields are written out: a spread of the
 * caller's object cost about 1.3 µs a delivery, as much as the rest of the gate's own work
 * (docs/benchmarks.md, the second Gate CPU row).
 */
export function withPayload(delivery: Delivery, payload: unknown): Delivery {
  if (delivery.payload !== undefined) return delivery;
  return { payload, headers: delivery.headers, rawBody: delivery.rawBody };
}

/** @internal The payload of a delivery, parsed from `rawBody` when `payload` is absent. */
export function payloadOf(delivery: Delivery): unknown {
  if (delivery.payload !== undefined) return delivery.payload;
  const raw = delivery.rawBody;
  if (raw === undefined) {
    throw new InvalidDeliveryError('not-json', 'delivery has neither a payload nor a rawBody');
  }
  let text: string;
  try {
    text = typeof raw === 'string' ? raw : utf8.decode(raw);
  } catch (error) {
    throw new InvalidDeliveryError('not-json', 'body is not valid UTF-8', { cause: error });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidDeliveryError('not-json', `body is not JSON: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

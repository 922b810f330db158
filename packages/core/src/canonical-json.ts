/** Deeper than this is refused rather than risking the call stack (and it catches cycles). */
const MAX_DEPTH = 1000;

/**
 * Serialize a JSON value in the JSON Canonicalization Scheme (RFC 8785): object members sorted
 * by the UTF-16 code units of their names, numbers in ECMAScript form (`1e+21`, `-0` as `0`),
 * strings escaped as `JSON.stringify` does, no whitespace. Two payloads that are equal as JSON
 * give the same string however they were serialized, so their digests match.
 *
 * Object members whose value is `undefined` are left out, as in `JSON.stringify`; an object
 * with a `toJSON` method (a `Date`, or a plain object that defines its own) is serialized
 * through it.
 *
 * @throws TypeError for anything JSON cannot represent: `undefined` (outside an object member),
 * functions, symbols, bigints, `NaN`, `±Infinity`, strings with lone surrogates (RFC 8785
 * §3.2.2.2), objects other than plain objects and arrays, and nesting deeper than 1000 levels
 * (which includes cycles).
 */
export function canonicalJson(value: unknown): string {
  // Fast path: copy the value with members inserted in sorted order and let the native
  // JSON.stringify write it; its number and string forms are exactly RFC 8785's. Objects
  // enumerate integer-like names first whatever the insertion order, so a payload with such a
  // name takes the slower writer below.
  try {
    return JSON.stringify(sortedCopy(value, 0));
  } catch (error) {
    if (error !== INDEX_KEY) throw error;
    return write(value, 0);
  }
}

/** Thrown (never escapes) when an object has an array-index member name. */
const INDEX_KEY = Symbol('index key');
const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/;

function sortedCopy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return checkString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number`);
      return value;
    case 'boolean':
      return value;
    case 'object': {
      if (value === null) return null;
      if (depth >= MAX_DEPTH) {
        throw new TypeError(`value is nested deeper than ${MAX_DEPTH} levels, or is cyclic`);
      }
      const source = jsonObject(value);
      if (source !== value) return sortedCopy(source, depth + 1);
      if (Array.isArray(value)) {
        // Pushed rather than `new Array(n)`, which is holey and slower for JSON.stringify.
        const copy: unknown[] = [];
        for (let i = 0; i < value.length; i++) copy.push(sortedCopy(value[i], depth + 1));
        return copy;
      }
      const keys = sortKeys(Object.keys(source));
      const copy: Record<string, unknown> = {};
      for (const key of keys) {
        const member = (source as Record<string, unknown>)[key];
        if (member === undefined) continue;
        const first = key.charCodeAt(0); // only names starting with a digit can be indices
        if (first >= 48 && first <= 57 && ARRAY_INDEX.test(key)) throw INDEX_KEY;
        if (key === '__proto__') {
          // Assignment would set the copy's prototype and drop the member.
          Object.defineProperty(copy, key, {
            value: sortedCopy(member, depth + 1),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else copy[checkString(key)] = sortedCopy(member, depth + 1);
      }
      return copy;
    }
    default:
      throw new TypeError(`${typeof value} is not a JSON value`);
  }
}

/**
 * `keys` sorted by UTF-16 code units, in place. The profile of the digest path (`pnpm bench`)
 * put most of its time in building the sorted copy; payload objects have a handful of members,
 * where an insertion sort with `<` (which compares code units, as `sort()` does) beats the
 * builtin sort. With the digit check before the index-name regex below, canonicalJson got
 * about 1.3x faster on 1 KB to 256 KB payloads.
 */
function sortKeys(keys: string[]): string[] {
  if (keys.length > 24) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    if (keys[j]! < key) continue;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/**
 * What an object stands for in JSON, as `JSON.stringify` decides it: what its `toJSON` returns
 * when it has one (own or inherited: a `Date`, or a plain object that defines it), else the
 * object itself when it is an array or a plain object; anything else throws.
 */
function jsonObject(value: object): unknown {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return toJSON.call(value);
  if (Array.isArray(value)) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return value;
  throw new TypeError(`${proto?.constructor?.name ?? 'object'} is not a JSON value`);
}

function checkString(value: string): string {
  if (!(value as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    throw new TypeError('string contains a lone surrogate, which RFC 8785 forbids');
  }
  return value;
}

function write(value: unknown, depth: number): string {
  switch (typeof value) {
    case 'string':
      // JSON.stringify escapes exactly as RFC 8785 §3.2.2.2 requires for well-formed strings.
      return JSON.stringify(checkString(value));
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number`);
      // Number#toString is the ECMAScript form RFC 8785 prescribes; only -0 needs care.
      return value === 0 ? '0' : String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (depth >= MAX_DEPTH) {
        throw new TypeError(`value is nested deeper than ${MAX_DEPTH} levels, or is cyclic`);
      }
      const source = jsonObject(value);
      if (source !== value) return write(source, depth + 1);
      if (Array.isArray(value)) return writeArray(value, depth + 1);
      return writeObject(value as Record<string, unknown>, depth + 1);
    }
    default:
      throw new TypeError(`${typeof value} is not a JSON value`);
  }
}

function writeArray(value: readonly unknown[], depth: number): string {
  let out = '[';
  for (let i = 0; i < value.length; i++) {
    if (i > 0) out += ',';
    out += write(value[i], depth);
  }
  return out + ']';
}

function writeObject(value: Record<string, unknown>, depth: number): string {
  // Default sort compares UTF-16 code units, which is the order RFC 8785 §3.2.3 requires.
  const keys = Object.keys(value).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const member = value[key];
    if (member === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += JSON.stringify(checkString(key)) + ':' + write(member, depth);
  }
  return out + '}';
}

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
  return writeCanonicalJson(value, undefined);
}

/**
 * @internal Write `value`'s canonical JSON, handing it to `emit` in pieces of about
 * {@link CHUNK} characters as it goes (when given), and return the rest. Hashing the pieces as
 * they come, rather than one long concatenated string, spares V8 flattening a string of
 * thousands of parts: the digest of a 256 KB payload took half as long again without it.
 */
export function writeCanonicalJson(
  value: unknown,
  emit: ((piece: string) => void) | undefined,
): string {
  const writer = new Writer(emit);
  writer.value(value, 0);
  return writer.out;
}

/** Pieces handed to `emit` are at least this long (UTF-16 code units). */
const CHUNK = 16 * 1024;

/**
 * The writer builds the text itself rather than letting `JSON.stringify` write a sorted copy:
 * building the copy cost more than writing (0.66x of `JSON.stringify` + SHA-256 at 16 KB for the
 * copy, 0.86x for this writer, `pnpm bench --only=keys`).
 */
class Writer {
  out = '';
  readonly #emit: ((piece: string) => void) | undefined;

  constructor(emit: ((piece: string) => void) | undefined) {
    this.#emit = emit;
  }

  value(value: unknown, depth: number): void {
    switch (typeof value) {
      case 'string':
        this.out += quote(value);
        return;
      case 'number':
        if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number`);
        // Number#toString is the ECMAScript form RFC 8785 prescribes; only -0 needs care.
        this.out += value === 0 ? '0' : String(value);
        return;
      case 'boolean':
        this.out += value ? 'true' : 'false';
        return;
      case 'object': {
        if (value === null) {
          this.out += 'null';
          return;
        }
        if (depth >= MAX_DEPTH) {
          throw new TypeError(`value is nested deeper than ${MAX_DEPTH} levels, or is cyclic`);
        }
        const source = jsonObject(value);
        if (source !== value) this.value(source, depth + 1);
        else if (Array.isArray(value)) this.#array(value, depth + 1);
        else this.#object(value as Record<string, unknown>, depth + 1);
        return;
      }
      default:
        throw new TypeError(`${typeof value} is not a JSON value`);
    }
  }

  #array(value: readonly unknown[], depth: number): void {
    this.out += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) this.out += ',';
      this.value(value[i], depth);
      if (this.#emit !== undefined && this.out.length >= CHUNK) {
        this.#emit(this.out);
        this.out = '';
      }
    }
    this.out += ']';
  }

  #object(value: Record<string, unknown>, depth: number): void {
    const shape = shapeOf(Object.keys(value));
    const names = shape.sorted;
    let empty = true;
    for (let i = 0; i < names.length; i++) {
      const member = value[names[i]!];
      if (member === undefined) continue;
      this.out += empty ? shape.first[i] : shape.next[i];
      empty = false;
      this.value(member, depth);
    }
    this.out += empty ? '{}' : '}';
  }
}

/**
 * An object's member names as written: sorted by UTF-16 code units (RFC 8785 §3.2.3), and as
 * JSON text with their colon, opening the object (`{"name":`) or following a member
 * (`,"name":`).
 */
interface Shape {
  /** The names in the object's own order, as `Object.keys` gave them. */
  readonly names: readonly string[];
  readonly sorted: readonly string[];
  readonly first: readonly string[];
  readonly next: readonly string[];
}

/**
 * Shapes seen lately, by their first name. Payloads repeat a few shapes (line items, their
 * metadata, the envelope), and sorting and quoting the names afresh for each object made up
 * half of the writer's own time. Bounded in shapes and in each shape's size, so that payloads
 * with endless or enormous member names cannot grow it.
 */
const shapes = new Map<string, Shape>();
const SHAPES_MAX = 512;
/** Only shapes this small are kept, so that the cache holds at most a few megabytes. */
const SHAPE_MAX_NAMES = 64;
const SHAPE_MAX_CHARS = 4096;

function shapeOf(names: string[]): Shape {
  const known = names.length === 0 ? undefined : shapes.get(names[0]!);
  if (known !== undefined && sameNames(known.names, names)) return known;
  const sorted = sortNames(names.slice());
  const first: string[] = [];
  const next: string[] = [];
  let chars = 0;
  for (const name of sorted) {
    const text = quote(name) + ':';
    first.push('{' + text);
    next.push(',' + text);
    chars += text.length;
  }
  const shape = { names, sorted, first, next };
  if (names.length > 0 && names.length <= SHAPE_MAX_NAMES && chars <= SHAPE_MAX_CHARS) {
    if (shapes.size >= SHAPES_MAX) shapes.clear();
    shapes.set(names[0]!, shape);
  }
  return shape;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * `names` sorted by UTF-16 code units, in place. Payload objects have a handful of members,
 * where an insertion sort with `<` (which compares code units, as `sort()` does) beats the
 * builtin sort.
 */
function sortNames(names: string[]): string[] {
  if (names.length > 24) return names.sort();
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    let j = i - 1;
    if (names[j]! < name) continue;
    while (j >= 0 && names[j]! > name) {
      names[j + 1] = names[j]!;
      j--;
    }
    names[j + 1] = name;
  }
  return names;
}

/** A string needs `JSON.stringify` (or is refused) only when it holds one of these code units. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const SPECIAL = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON text, escaped exactly as `JSON.stringify` and RFC 8785 §3.2.2.2 do. */
function quote(text: string): string {
  if (!SPECIAL.test(text)) return '"' + text + '"';
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    throw new TypeError('string contains a lone surrogate, which RFC 8785 forbids');
  }
  return JSON.stringify(text);
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

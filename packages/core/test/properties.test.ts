import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, deriveKey, InvalidDeliveryError, type Selector } from '../src/index.js';

/** JSON values as JSON.parse produces them (no -0, no lone surrogates). */
const json = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);

/** The same value with every object's members inserted in a shuffled order. */
function shuffled(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => shuffled(v, seed + i));
  if (typeof value !== 'object' || value === null) return value;
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = (seed * 31 + i * 17) % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    Object.defineProperty(out, key, {
      value: shuffled((value as Record<string, unknown>)[key], seed + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

describe('canonicalJson properties', () => {
  it('is deterministic and insensitive to member order', () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, seed) => {
        expect(canonicalJson(shuffled(value, seed))).toBe(canonicalJson(value));
      }),
      { numRuns: 500 },
    );
  });

  it('parses back to the same value (a JSON.parse round trip)', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(value);
      }),
      { numRuns: 500 },
    );
  });

  it('is a fixed point: canonicalizing canonical JSON changes nothing', () => {
    fc.assert(
      fc.property(json, (value) => {
        const once = canonicalJson(value);
        expect(canonicalJson(JSON.parse(once))).toBe(once);
      }),
      { numRuns: 500 },
    );
  });

  it('agrees with a naive sort-then-stringify reference', () => {
    const reference = (v: unknown): string => {
      if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
      if (typeof v === 'object' && v !== null) {
        return `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${reference((v as Record<string, unknown>)[k])}`)
          .join(',')}}`;
      }
      return JSON.stringify(v);
    };
    fc.assert(
      fc.property(json, (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 500 },
    );
  });
});

describe('deriveKey properties', () => {
  const headerValue = fc.oneof(
    fc.string(),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.constant(undefined),
  );
  const headers = fc.dictionary(fc.string({ maxLength: 20 }), headerValue, { maxKeys: 6 });
  const selectors: (Selector[] | undefined)[] = [
    undefined,
    ['id'],
    ['data.object.id', { header: 'X-Event-Id' }],
    [{ header: 'webhook-id' }, '__proto__', 'constructor.name'],
  ];
  const anything = fc.oneof(fc.jsonValue(), fc.anything());

  it('never throws anything but InvalidDeliveryError, for any value and any header set', () => {
    fc.assert(
      fc.property(
        anything,
        headers,
        fc.constantFrom(...selectors),
        fc.boolean(),
        (payload, headerBag, eventId, digestFallback) => {
          try {
            const { key, source } = deriveKey(
              { payload, headers: headerBag },
              { eventId, digestFallback },
            );
            expect(key).toMatch(
              source === 'digest'
                ? /^dig:[0-9a-f]{64}$/
                : /^evt:(#[0-9a-f]{64}|[\w.:@/+=-]{1,128})$/,
            );
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidDeliveryError);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('never throws anything but InvalidDeliveryError for arbitrary raw bodies', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.uint8Array()), (rawBody) => {
        try {
          deriveKey({ rawBody }, { eventId: 'id' });
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidDeliveryError);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('gives one key to a payload however it was serialized', () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, seed) => {
        const a = deriveKey({ rawBody: JSON.stringify(value) });
        const b = deriveKey({ rawBody: JSON.stringify(shuffled(value, seed), null, 2) });
        expect(b).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });
});

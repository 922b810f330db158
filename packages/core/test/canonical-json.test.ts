import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/index.js';

/**
 * The plainest reading of RFC 8785 for JSON values, as an oracle: members sorted with the
 * builtin sort (UTF-16 code units), everything else as `JSON.stringify` writes it.
 */
function oracle(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(oracle).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .filter((name) => (value as Record<string, unknown>)[name] !== undefined)
      .map((name) => `${JSON.stringify(name)}:${oracle((value as Record<string, unknown>)[name])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A double from its IEEE 754 bit pattern, as RFC 8785 Appendix B lists them. */
function double(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('canonicalJson (RFC 8785)', () => {
  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('serializes the double 0x%s as %s (Appendix B)', (hex, expected) => {
    expect(canonicalJson(double(hex))).toBe(expected);
  });

  it.each([
    ['7fffffffffffffff', 'NaN'],
    ['7ff0000000000000', 'Infinity'],
    ['fff0000000000000', '-Infinity'],
  ])('refuses the non-finite double 0x%s (%s)', (hex) => {
    expect(() => canonicalJson(double(hex))).toThrow(TypeError);
  });

  it('sorts members by UTF-16 code units, not by locale or code point', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","1":"One","\\u0080":"Control\\u007f","\\ud83d\\ude02":"Smiley",' +
        '"\\u00f6":"Latin Small Letter O With Diaeresis","\\ufb33":"Hebrew Letter Dalet With Dagesh",' +
        '"</script>":"Browser Challenge"}',
    );
    expect(canonicalJson(input)).toBe(
      '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f",' +
        '"ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😂":"Smiley",' +
        '"\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    const french = { sin: 4, pêche: 3, péché: 2, peach: 1 };
    expect(canonicalJson(french)).toBe('{"peach":1,"péché":2,"pêche":3,"sin":4}');
  });

  it('writes the RFC 8785 §3.2.4 sample: number forms, escapes, literals', () => {
    const input = JSON.parse(
      '{"numbers":[1E30,4.50,333333333.33333329,2e-3,0.000000000000000000000000001],' +
        '"escaping":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"escaping":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],' +
        '"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}',
    );
  });

  it('canonicalizes nested structures and drops insignificant whitespace', () => {
    const input = JSON.parse(
      '{ "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0}, "10": { }, "": "empty", "a": { }, "111": [ { } ], "A": { } }',
    );
    expect(canonicalJson(input)).toBe(
      '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}',
    );
  });

  it('escapes control characters in lower-case hex and keeps the rest as is', () => {
    expect(canonicalJson('\b\t\n\f\r\u0000\u001f\u007f\u2028')).toBe(
      '"\\b\\t\\n\\f\\r\\u0000\\u001f\u007f\u2028"',
    );
  });

  it('gives equal output for payloads that differ only in member order and spacing', () => {
    const a = JSON.parse('{"b":[1,{"y":2,"x":1}],"a":"z"}');
    const b = JSON.parse('{ "a" : "z", "b" : [ 1 , { "x" : 1 , "y" : 2.0 } ] }');
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  it('leaves out undefined members and uses toJSON, as JSON.stringify does', () => {
    expect(canonicalJson({ b: undefined, a: new Date(0) })).toBe(
      '{"a":"1970-01-01T00:00:00.000Z"}',
    );
  });

  it.each([
    ['a lone surrogate', '\ud800'],
    ['undefined', undefined],
    ['a bigint', 10n],
    ['a function', () => 1],
    ['a symbol', Symbol('x')],
    ['a Map', new Map()],
    ['undefined in an array', [undefined]],
  ])('refuses %s', (_name, value) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
  });

  it('refuses cycles and absurd nesting with a TypeError, not a stack overflow', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/nested deeper/);
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    expect(() => canonicalJson(deep)).toThrow(/nested deeper/);
  });

  it('treats __proto__ as an ordinary member name', () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"a":1}');
    expect(canonicalJson(input)).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('canonicalJson with integer-like member names', () => {
  it('orders "10" before "9" and "1" after " " by code units, though objects enumerate them first', () => {
    const input = JSON.parse('{"9":"nine","10":"ten"," ":"space","a":{"2":1,"1":2,"b":[{"0":0}]}}');
    expect(canonicalJson(input)).toBe(
      '{" ":"space","10":"ten","9":"nine","a":{"1":2,"2":1,"b":[{"0":0}]}}',
    );
  });

  it('keeps names that only look numeric in the fast path order', () => {
    expect(canonicalJson({ '01': 1, '1.5': 2, '-1': 3, '4294967296': 4 })).toBe(
      '{"-1":3,"01":1,"1.5":2,"4294967296":4}',
    );
  });
});

describe('canonicalJson against a plain oracle', () => {
  it('writes any JSON value as the oracle does, member names and strings of any UTF-16 included', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 12 });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4, stringUnit: 'grapheme' }), (value) => {
        expect(canonicalJson(value)).toBe(oracle(value));
        expect(canonicalJson(JSON.parse(JSON.stringify(value)))).toBe(oracle(value));
      }),
      { numRuns: 500 },
    );
    // Objects of one shape in a row share their sorted names; a different shape must not.
    fc.assert(
      fc.property(fc.array(fc.dictionary(text, fc.integer(), { maxKeys: 4 })), (objects) => {
        expect(canonicalJson(objects)).toBe(oracle(objects));
      }),
      { numRuns: 300 },
    );
  });

  it('escapes any string as JSON.stringify does, and refuses exactly those with a lone surrogate', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        if ((text as unknown as { isWellFormed(): boolean }).isWellFormed()) {
          expect(canonicalJson(text)).toBe(JSON.stringify(text));
          expect(canonicalJson({ [text]: text })).toBe(
            `{${JSON.stringify(text)}:${JSON.stringify(text)}}`,
          );
        } else {
          expect(() => canonicalJson(text)).toThrow(/lone surrogate/);
          expect(() => canonicalJson({ [text]: 1 })).toThrow(/lone surrogate/);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe('canonicalJson with large objects', () => {
  it('writes an object of many or long member names as the oracle does, again and again', () => {
    const many = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    const long = { ['x'.repeat(10_000)]: 1, a: 2 };
    for (let round = 0; round < 3; round++) {
      expect(canonicalJson(many)).toBe(oracle(many));
      expect(canonicalJson(long)).toBe(oracle(long));
    }
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { scripts } from '../src/scripts/index.js';

const own = new URL('../src/scripts/', import.meta.url);
const ioredis = new URL('../../ioredis/src/scripts/', import.meta.url);

describe('scripts', () => {
  // The two adapters carry the same Lua (neither may depend on the other, and core holds no
  // Redis code): this keeps the copies from drifting apart.
  it('are byte for byte the ones @hookgate/ioredis runs', () => {
    const files = readdirSync(own).sort();
    expect(readdirSync(ioredis).sort()).toEqual(files);
    for (const file of files) {
      expect(readFileSync(new URL(file, own), 'utf8'), file).toBe(
        readFileSync(new URL(file, ioredis), 'utf8'),
      );
    }
  });

  it('each open with a comment naming their KEYS, ARGV and return value', () => {
    for (const [name, { lua, sha }] of Object.entries(scripts)) {
      const header = lua
        .split('\n')
        .filter((line) => line.startsWith('--'))
        .join('\n');
      expect(lua.startsWith(`-- ${name}-1:`), name).toBe(true);
      expect(header, name).toMatch(/KEYS\[1\]/);
      expect(header, name).toMatch(/ARGV\[1\]/);
      expect(header, name).toMatch(/Returns/);
      expect(sha).toMatch(/^[0-9a-f]{40}$/);
    }
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { scripts } from '../src/index.js';

describe('scripts', () => {
  it.each(Object.entries(scripts))(
    '%s is known to EVALSHA by the SHA1 of its text',
    (_name, script) => {
      expect(script.sha).toBe(createHash('sha1').update(script.lua).digest('hex'));
    },
  );

  it.each(Object.entries(scripts))(
    '%s opens with its KEYS, ARGV and Returns, and touches one key',
    (_name, script) => {
      expect(script.lua).toMatch(/^-- \S+-1: /);
      expect(script.lua).toContain('-- KEYS[1]');
      expect(script.lua).toContain('-- Returns');
      expect(script.lua).not.toMatch(/KEYS\[2\]/);
      // Lua booleans read differently under RESP2 and RESP3: integers only.
      expect(script.lua).not.toMatch(/return (true|false)/);
    },
  );
});

import { createHash } from 'node:crypto';
import { StoreUnavailableError } from '@hookgate/core';
import { describe, expect, it } from 'vitest';
import { type RedisCommands, RedisStore, scripts } from '../src/index.js';

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

/** A thenable that is not a native promise, as some clients' command results are. */
const thenable = <T>(settle: () => T) => ({
  // biome-ignore lint/suspicious/noThenProperty: a thenable is what this stands for
  then<R1, R2>(onFulfilled?: (value: T) => R1, onRejected?: (reason: unknown) => R2) {
    return Promise.resolve().then(settle).then(onFulfilled, onRejected);
  },
});

describe('RedisStore over a client', () => {
  const noScript = () => {
    throw new Error('NOSCRIPT No matching script');
  };

  it('takes any thenable as a reply, and falls back to EVAL on NOSCRIPT through one', async () => {
    const sent: string[] = [];
    const reply = (command: string, value: () => unknown) =>
      thenable(() => {
        sent.push(command);
        return value();
      });
    const commands = {
      setNxGet: () => reply('SET', () => null),
      evalsha: () => reply('EVALSHA', noScript),
      eval: () => reply('EVAL', () => 1),
    } as unknown as RedisCommands;
    const store = new RedisStore('TestStore', commands);
    expect(await store.claim('k', '1234', 1000)).toBe('acquired');
    expect(await store.done('k', '1234', 1000)).toBe(true);
    expect(sent).toEqual(['SET', 'EVALSHA', 'EVAL']);
  });

  it('turns a command that throws synchronously into StoreUnavailableError', async () => {
    const boom = () => {
      throw new Error('socket closed');
    };
    const store = new RedisStore('TestStore', { setNxGet: boom, evalsha: boom, eval: boom });
    await expect(store.claim('k', '1234', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.done('k', '1234', 1000)).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      message: expect.stringContaining('TestStore'),
    });
  });
});

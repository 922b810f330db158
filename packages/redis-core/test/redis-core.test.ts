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

  it("reads a script's integer reply as a number, a bigint or its text, and anything else as no answer", async () => {
    const storeAnswering = (reply: unknown) =>
      new RedisStore('TestStore', {
        setNxGet: async () => null,
        evalsha: async () => reply,
        eval: async () => reply,
      });
    for (const reply of [1, 1n, '1', Buffer.from('1')]) {
      expect(await storeAnswering(reply).done('k', '1234', 1000)).toBe(true);
    }
    expect(await storeAnswering(Buffer.from('0')).release('k', '1234')).toBe(false);
    // A nil, an empty string or array, a boolean: Number() would read each as 0 or 1.
    for (const reply of [null, '', [], [1], false, true, '1.0', ' 1']) {
      await expect(storeAnswering(reply).done('k', '1234', 1000)).rejects.toMatchObject({
        name: 'StoreUnavailableError',
        message: expect.stringContaining('unexpected reply'),
      });
    }
  });
});

describe('RedisStore resends a command only where it was not applied', () => {
  /** A node: what it was sent, and how it answers each command. */
  const node = (name: string, log: string[], answer: (command: string) => unknown) => {
    const reply = (command: string) => {
      log.push(`${name} ${command}`);
      try {
        return Promise.resolve(answer(command));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return {
      setNxGet: () => reply('SET'),
      evalsha: () => reply('EVALSHA'),
      eval: () => reply('EVAL'),
    } satisfies RedisCommands;
  };
  const error = (message: string) => () => {
    throw new Error(message);
  };

  it('follows MOVED and ASK to the node named, and EVAL there when it lost the script', async () => {
    const log: string[] = [];
    const b = node('b', log, (command) => {
      if (command === 'EVALSHA') throw new Error('NOSCRIPT No matching script');
      return command === 'SET' ? null : 1;
    });
    const redirects: string[] = [];
    const store = new RedisStore('TestStore', {
      ...node('a', log, (command) => {
        throw new Error(command === 'SET' ? 'MOVED 12 10.0.0.2:7001' : 'ASK 12 10.0.0.2:7001');
      }),
      redirect: async (address, asking) => {
        redirects.push(`${address} ${asking ? 'ASK' : 'MOVED'}`);
        return b;
      },
    });
    expect(await store.claim('k', '1234', 1000)).toBe('acquired');
    expect(await store.done('k', '1234', 1000)).toBe(true);
    expect(log).toEqual(['a SET', 'b SET', 'a EVALSHA', 'b EVALSHA', 'b EVAL']);
    expect(redirects).toEqual(['10.0.0.2:7001 MOVED', '10.0.0.2:7001 ASK']);
  });

  it('resends what the client never sent, at most three times', async () => {
    const log: string[] = [];
    let refusals = 0;
    const commands = {
      ...node('a', log, () => {
        if (refusals-- > 0) throw new Error('not sent');
        return null;
      }),
      unsent: (e: unknown) => e instanceof Error && e.message === 'not sent',
    };
    const store = new RedisStore('TestStore', commands);
    refusals = 3;
    expect(await store.claim('k', '1234', 1000)).toBe('acquired');
    expect(log).toEqual(['a SET', 'a SET', 'a SET', 'a SET']);
    refusals = 4;
    log.length = 0;
    const refused = await store.claim('k', '1234', 1000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect((refused as Error).cause).toMatchObject({ message: 'not sent' });
    expect(log).toHaveLength(4);
  });

  it('rejects with the redirection when no node is known, or with what finding one threw', async () => {
    const log: string[] = [];
    const moved = node('a', log, error('MOVED 12 10.0.0.9:7001'));
    const unknown = new RedisStore('TestStore', { ...moved, redirect: async () => undefined });
    await expect(unknown.claim('k', '1234', 1000)).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      cause: { message: 'MOVED 12 10.0.0.9:7001' },
    });
    const broken = new RedisStore('TestStore', {
      ...moved,
      redirect: () => {
        throw new Error('no slot map');
      },
    });
    await expect(broken.done('k', '1234', 1000)).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      cause: { message: 'no slot map' },
    });
    // Without a redirect at all (a standalone client), the error is passed on.
    await expect(new RedisStore('TestStore', moved).release('k', '1234')).rejects.toMatchObject({
      cause: { message: 'MOVED 12 10.0.0.9:7001' },
    });
    expect(log).toEqual(['a SET', 'a EVALSHA', 'a EVALSHA']);
  });

  it('a WRONGTYPE error is a foreign value; NOSCRIPT twice is an error, not a loop', async () => {
    const log: string[] = [];
    const wrongType = new RedisStore(
      'TestStore',
      node('a', log, error('WRONGTYPE Operation against a key holding the wrong kind of value')),
    );
    await expect(wrongType.done('k', '1234', 1000)).rejects.toMatchObject({
      name: 'StoreUnavailableError',
      reason: 'foreign-value',
    });
    log.length = 0;
    const lost = new RedisStore('TestStore', node('a', log, error('NOSCRIPT No matching script')));
    await expect(lost.done('k', '1234', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(log).toEqual(['a EVALSHA', 'a EVAL']);
  });

  it('a deadline that passes during a redirection rejects, and nothing is sent after it', async () => {
    const log: string[] = [];
    let found: (commands: RedisCommands) => void = () => {};
    const store = new RedisStore(
      'TestStore',
      {
        ...node('a', log, error('MOVED 12 10.0.0.2:7001')),
        redirect: () => new Promise<RedisCommands>((resolve) => (found = resolve)),
      },
      { timeoutMs: 20 },
    );
    const claim = store.claim('k', '1234', 1000).catch((e: unknown) => e);
    const timedOut = await claim;
    expect(timedOut).toBeInstanceOf(StoreUnavailableError);
    expect((timedOut as Error).cause).toMatchObject({ name: 'TimeoutError' });
    found(node('b', log, () => null));
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The MOVED proved the command was not applied, and the caller has its answer: a resend
    // now would be a write nobody waits for (a claim holding the key for its TTL).
    expect(log).toEqual(['a SET']);
    expect(await claim).toBe(timedOut);
  });
});

describe('RedisStore settles every operation, whatever the client throws', () => {
  const log: string[] = [];
  const answering = (answer: (command: string) => unknown): RedisCommands => {
    const reply = (command: string) => {
      log.push(command);
      return Promise.resolve().then(() => answer(command));
    };
    return {
      setNxGet: () => reply('SET'),
      evalsha: () => reply('EVALSHA'),
      eval: () => reply('EVAL'),
    };
  };
  const odd = (message: unknown) => Object.assign(new Error('odd'), { message });

  it('rejects, within the deadline, for an error whose message is not text', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const lost = new RedisStore(
        'TestStore',
        answering((command) => {
          throw command === 'EVALSHA' ? new Error('NOSCRIPT No matching script') : odd(undefined);
        }),
        { timeoutMs: 100 },
      );
      await expect(lost.done('k', '1234', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
      // One whose message is a symbol is wrapped as any other, its cause kept.
      const indescribable = odd(Symbol('no text'));
      const redirected = new RedisStore('TestStore', {
        ...answering(() => {
          throw new Error('MOVED 1 10.0.0.2:7001');
        }),
        redirect: async () => {
          throw indescribable;
        },
      });
      await expect(redirected.claim('k', '1234', 1000)).rejects.toMatchObject({
        name: 'StoreUnavailableError',
        message: 'TestStore: claim failed: Error (its message is not text)',
        cause: indescribable,
      });
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('sends EVAL only for a script: a NOSCRIPT answer to the claim is an error', async () => {
    log.length = 0;
    const store = new RedisStore(
      'TestStore',
      answering(() => {
        throw new Error('NOSCRIPT No matching script');
      }),
    );
    await expect(store.claim('k', '1234', 1000)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(log).toEqual(['SET']);
  });

  it('a NOSCRIPT thrown synchronously by EVALSHA falls back to EVAL as a rejected one does', async () => {
    log.length = 0;
    const commands = answering(() => 1);
    const store = new RedisStore('TestStore', {
      ...commands,
      evalsha: () => {
        log.push('EVALSHA');
        throw new Error('NOSCRIPT No matching script');
      },
    });
    expect(await store.done('k', '1234', 1000)).toBe(true);
    expect(log).toEqual(['EVALSHA', 'EVAL']);
  });
});

import { StoreUnavailableError } from '@hookgate/core';
import { describe, expect, it } from 'vitest';
import { header, listen, SwitchableStore, sign } from '../src/harness.js';

describe('the suite harness', () => {
  it('SwitchableStore passes through to a MemoryStore until an operation is switched off', async () => {
    const store = new SwitchableStore();
    expect(await store.claim('k', 't', 1_000)).toBe('acquired');
    store.down.add('done');
    await expect(store.done('k', 't', 1_000)).rejects.toThrow(/ECONNREFUSED/);
    store.error = new StoreUnavailableError('down');
    await expect(store.done('k', 't', 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
    store.down.clear();
    expect(await store.done('k', 't', 1_000)).toBe(true);
    expect(await store.claim('k', 'u', 1_000)).toBe('done');
  });

  it('header() reads Node.js headers and Fetch Headers alike', () => {
    expect(header({ 'x-a': ['1', '2'] }, 'x-a')).toBe('1');
    expect(header({ 'x-a': '1' }, 'x-b')).toBeUndefined();
    expect(header(new Headers({ 'X-A': '1' }), 'x-a')).toBe('1');
  });

  it('sign() is an HMAC of the exact bytes', () => {
    expect(sign('{"a":1}')).toBe(sign(Buffer.from('{"a":1}')));
    expect(sign('{"a":1}')).not.toBe(sign('{"a": 1}'));
  });

  it('listen() serves on an ephemeral 127.0.0.1 port and closes', async () => {
    const server = await listen((_req, res) => res.end('ok'));
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(server.url)).text()).toBe('ok');
    await server.close();
    await expect(fetch(server.url)).rejects.toThrow();
  });
});

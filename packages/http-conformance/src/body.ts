import { request } from 'node:http';
import { expect, it } from 'vitest';
import { sign, sleep } from './harness.js';
import type { SuiteContext } from './index.js';

/** The raw body: exact bytes for verify, the size limit, and a body parser in front. */
export function body({ start, network, parsedBody }: SuiteContext): void {
  // Spacing, key order and escapes a re-serialization would change; any change breaks the HMAC.
  const exact = '{ "id" : "evt_é1",\n  "note": "caf\\u00e9 ☕", "n": 1.0 }';

  it('verify is given the exact bytes of the body', async () => {
    let seen: Uint8Array | undefined;
    const h = await start({
      binding: {
        verify: (raw) => {
          seen = raw;
          return true;
        },
      },
    });
    expect((await h.post(exact)).status).toBe(200);
    expect(Buffer.from(seen!).equals(Buffer.from(exact))).toBe(true);
    expect(h.handled[0]?.payload).toEqual({ id: 'evt_é1', note: 'café ☕', n: 1 });
  });

  it('a body over the limit answers 413 and claims nothing', async () => {
    const h = await start({ binding: { limit: 1024 } });
    const big = JSON.stringify({ id: 'evt_1', pad: 'x'.repeat(64 * 1024) });
    const res = await h.post(big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ status: 'too-large' });
    expect(h.decisions.map((d) => d.decision)).toEqual(['too-large']);
    expect(h.handled).toHaveLength(0);
  });

  // Left out where the framework's own parser answers such a body first (`parsedBody`).
  if (!parsedBody)
    it('a streamed body without Content-Length over the limit answers 413', async () => {
      const h = await start({ binding: { limit: 1024 } });
      const chunk = new TextEncoder().encode(
        JSON.stringify({ id: 'evt_1', pad: 'y'.repeat(8192) }),
      );
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 8; i++) controller.enqueue(chunk);
          controller.close();
        },
      });
      const res = await h.send(stream, {
        headers: { 'content-type': 'application/json', 'x-signature': 'unused' },
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(h.decisions.map((d) => d.decision)).toEqual(['too-large']);
    });

  it('the default limit is 1 MiB', async () => {
    const h = await start();
    const within = JSON.stringify({ id: 'evt_1', pad: 'z'.repeat(1_000_000) });
    expect((await h.post(within)).status).toBe(200);
    const over = JSON.stringify({ id: 'evt_2', pad: 'z'.repeat(1_048_576) });
    expect((await h.post(over)).status).toBe(413);
    expect(h.handled).toHaveLength(1);
  });

  it('works behind a JSON body parser set up to keep the raw bytes', async () => {
    const h = await start({ bodyParser: 'keep-raw' });
    const res = await h.post(exact);
    expect(res.status).toBe(200);
    expect(h.handled[0]?.payload).toEqual({ id: 'evt_é1', note: 'café ☕', n: 1 });
    expect((await h.post(exact)).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });

  it('behind a body parser that dropped the raw bytes, fails with a clear error and claims nothing', async () => {
    const h = await start({ bodyParser: 'drop-raw' });
    const res = await h.post(exact, { signature: sign(exact) });
    expect(res.status).toBe(500);
    expect(h.errors).toHaveLength(1);
    expect(String((h.errors[0] as Error).message)).toMatch(/raw bytes/);
    expect(h.decisions.map((d) => d.decision)).toEqual(['misconfigured']);
    expect(h.decisions[0]?.error).toBe(h.errors[0]);
    expect(h.handled).toHaveLength(0);
  });

  if (!network || parsedBody) return;

  it('a client that goes away mid-body: nothing is claimed and no error is raised', async () => {
    const h = await start();
    const text = JSON.stringify({ id: 'evt_1', pad: 'p'.repeat(4096) });
    const req = request(`${h.server.url}/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(text.length),
        'x-signature': sign(text),
      },
    });
    req.on('error', () => {});
    req.write(text.slice(0, 1024));
    // Let the server read the headers and the first bytes before the client goes: turns of the
    // event loop, each with an I/O poll, then a pause. A timer alone is not enough: a process
    // stalled on a busy machine runs its due timers before the I/O that waited.
    await new Promise((resolve) => req.once('socket', resolve));
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    await sleep(50);
    req.destroy();
    await h.waitFor('aborted');
    // The server saw the connection close; give it time to (wrongly) report something more.
    await sleep(200);
    expect(h.errors).toEqual([]);
    expect(h.decisions.map((d) => d.decision)).toEqual(['aborted']);
    // And the complete delivery is processed.
    expect((await h.post(text)).status).toBe(200);
    expect(h.handled).toHaveLength(1);
  });
}

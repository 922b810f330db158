import { expect, it } from 'vitest';
import { latch } from './harness.js';
import type { SuiteContext } from './index.js';

/** Many identical deliveries at once: exactly one runs the handler. */
export function concurrency({ start }: SuiteContext): void {
  for (const inFlight of ['retry', 'ack'] as const) {
    const others = inFlight === 'retry' ? '409 with Retry-After' : '200';
    it(`50 parallel identical deliveries run the handler once; the others answer ${others} (inFlight: '${inFlight}')`, async () => {
      const h = await start({ binding: { inFlight } });
      const hold = latch();
      h.behaviour = async () => {
        // Hold the one claim until every other delivery has been answered.
        await hold.wait();
        return { status: 200, body: { status: 'processed' } };
      };
      let answered = 0;
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          h.post({ id: 'evt_burst', n: 1 }).then(async (res) => {
            const body = (await res.json()) as { status: string };
            if (++answered === 49) hold.open();
            return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
          }),
        ),
      );
      expect(h.handled).toHaveLength(1);
      const processed = responses.filter((r) => r.body.status === 'processed');
      const held = responses.filter((r) => r.body.status === 'in-flight');
      expect(processed).toHaveLength(1);
      expect(held).toHaveLength(49);
      for (const r of held) {
        expect(r.status).toBe(inFlight === 'retry' ? 409 : 200);
        expect(r.retryAfter).toBe(inFlight === 'retry' ? '10' : null);
      }
      await h.waitFor('done');
      const again = await h.post({ id: 'evt_burst', n: 1 });
      expect(await again.json()).toEqual({ status: 'duplicate' });
    });
  }
}

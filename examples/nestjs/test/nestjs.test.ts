import type { INestApplication } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExpressApp } from '../src/express/app.js';
import { createFastifyApp } from '../src/fastify/app.js';
import { sign } from '../src/gate.js';
import { WebhooksService } from '../src/webhooks.service.js';

const platforms = [
  ['Nest on Express (@hookgate/express)', createExpressApp],
  ['Nest on Fastify (@hookgate/nestjs)', createFastifyApp],
] as const;

for (const [name, create] of platforms) {
  describe(name, () => {
    let app: INestApplication;
    let url: string;
    let service: WebhooksService;

    beforeAll(async () => {
      app = await create();
      await app.listen(0, '127.0.0.1');
      url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      service = app.get(WebhooksService);
    });
    afterAll(() => app?.close());

    const deliver = (event: object, signature?: string) => {
      const body = JSON.stringify(event);
      return fetch(`${url}/webhooks/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': signature ?? sign(body) },
        body,
      });
    };

    it('runs a new event once and answers its redelivery 200 duplicate', async () => {
      const event = { id: 'evt_1', type: 'payment.succeeded', amount: 4200 };
      expect((await deliver(event)).status).toBe(204);
      const again = await deliver(event);
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ status: 'duplicate' });
      expect(service.applied.filter((e) => e.id === 'evt_1')).toHaveLength(1);
    });

    it('a handler failure answers 500 and releases the event: the retry runs it again', async () => {
      const event = { id: 'evt_2', type: 'payment.succeeded', amount: 100 };
      service.failNext.add('evt_2');
      expect((await deliver(event)).status).toBe(500);
      // The claim is settled as the 500 leaves; give it a moment before the retry.
      let retry = await deliver(event);
      for (let i = 0; retry.status === 409 && i < 100; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        retry = await deliver(event);
      }
      expect(retry.status).toBe(204);
      expect(service.applied.filter((e) => e.id === 'evt_2')).toHaveLength(1);
      expect((await deliver(event)).status).toBe(200);
    });

    it('a bad signature answers 401 and runs nothing', async () => {
      const res = await deliver({ id: 'evt_3', type: 'x', amount: 1 }, 'forged');
      expect(res.status).toBe(401);
      expect(service.applied.some((e) => e.id === 'evt_3')).toBe(false);
      // The event was not claimed: the genuine delivery still runs.
      expect((await deliver({ id: 'evt_3', type: 'x', amount: 1 })).status).toBe(204);
    });

    it("other routes keep Nest's own JSON parsing", async () => {
      const res = await fetch(`${url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'A-1', qty: 2 }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: { sku: 'A-1', qty: 2 } });
    });
  });
}

for (const [name, create] of platforms) {
  describe(`${name} without rawBody: true`, () => {
    it("answers 500 and claims nothing: Nest's JSON parser kept no bytes to verify", async () => {
      const app = await create({ rawBody: false });
      try {
        await app.listen(0, '127.0.0.1');
        const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
        const body = JSON.stringify({ id: 'evt_1', type: 'payment.succeeded', amount: 1 });
        const res = await fetch(`${url}/webhooks/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-signature': sign(body) },
          body,
        });
        expect(res.status).toBe(500);
        expect(app.get(WebhooksService).applied).toEqual([]);
      } finally {
        await app.close();
      }
    });
  });
}

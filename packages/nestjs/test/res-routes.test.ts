/**
 * A route whose handler takes the response (`@Res()` without passthrough) sends it itself, and
 * Nest sends no value there: the interceptor's own answers (a duplicate, a 401) are written by
 * the interceptor, not left hanging.
 */
import { createGate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { Controller, Module, Post, Res, UseInterceptors } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook, WebhookInterceptor } from '../src/index.js';
import { createApp, PLATFORMS, serve } from './nest-app.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Express's response, or Fastify's reply: the handler answers through either. */
type PlatformResponse = {
  code?: (status: number) => { send: (body: unknown) => void };
  status?: (status: number) => { json: (body: unknown) => void };
};

/** What the handlers answer a new event with, through the response they took. */
function processed(res: PlatformResponse, event: WebhookEvent): void {
  const body = { status: 'processed', key: event.key };
  if (res.code !== undefined) res.code(200).send(body);
  else res.status!(200).json(body);
}

/** Serve `controller` on `platform`; the function returned posts a JSON body (one hanging fails). */
async function serving(platform: (typeof PLATFORMS)[number], controller: new () => object) {
  @Module({ controllers: [controller] })
  class HooksModule {}
  const server = await serve(await createApp(platform, HooksModule));
  closers.push(() => server.close());
  return async (body: string) => {
    const res = await fetch(`${server.url}/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(5_000), // a hanging answer fails the test, not the run
    });
    return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
  };
}

for (const platform of PLATFORMS) {
  describe(platform, () => {
    it('@Res() without passthrough: the handler answers a new event, the interceptor a duplicate and a 401', async () => {
      const decisions: string[] = [];
      const gate = createGate({
        store: new MemoryStore(),
        eventId: 'id',
        onDecision: (event) => decisions.push(event.decision),
      });
      const verify = (raw: Buffer) => !raw.includes('forged');
      let handled = 0;

      @Controller()
      class Hooks {
        @Post('webhook')
        @UseInterceptors(new WebhookInterceptor({ gate, verify }))
        receive(@Webhook() event: WebhookEvent, @Res() res: PlatformResponse): void {
          handled++;
          processed(res, event);
        }
      }
      const post = await serving(platform, Hooks);
      expect(await post('{"id":"evt_1"}')).toMatchObject({
        status: 200,
        body: { key: 'evt:evt_1' },
      });
      expect(await post('{"id":"evt_1"}')).toEqual({
        status: 200,
        type: 'application/json; charset=utf-8',
        body: { status: 'duplicate' },
      });
      expect(await post('{"id":"evt_2","forged":1}')).toMatchObject({ status: 401 });
      expect(handled).toBe(1);
      expect(decisions).toEqual(['new', 'done', 'duplicate', 'unverified']);
    });

    it('@Res() on a method a decorator wrapped in a function of another name: the duplicate is answered', async () => {
      const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
      /** As tracing and logging decorators do: the method becomes a wrapper named otherwise. */
      const Traced = (): MethodDecorator => (_target, _key, descriptor) => {
        const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
        descriptor.value = function traced(this: unknown, ...args: unknown[]) {
          return original.apply(this, args);
        } as never;
      };

      @Controller()
      class Hooks {
        @Post('webhook')
        @UseInterceptors(new WebhookInterceptor({ gate, verify: false }))
        @Traced()
        receive(@Webhook() event: WebhookEvent, @Res() res: PlatformResponse): void {
          processed(res, event);
        }
      }
      const post = await serving(platform, Hooks);
      expect(await post('{"id":"evt_1"}')).toMatchObject({
        status: 200,
        body: { key: 'evt:evt_1' },
      });
      expect(await post('{"id":"evt_1"}')).toMatchObject({
        status: 200,
        body: { status: 'duplicate' },
      });
    });
  });
}

import { request } from 'node:http';
import { createGate, type DecisionEvent, type Gate, type WebhookEvent } from '@hookgate/core';
import { sign } from '@hookgate/http-conformance';
import { MemoryStore } from '@hookgate/memory';
import {
  type ArgumentsHost,
  BadRequestException,
  Body,
  type CanActivate,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  HttpCode,
  type INestApplication,
  Inject,
  Injectable,
  Module,
  type PipeTransform,
  Post,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { map, type Observable, timer } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Verify, Webhook, WebhookInterceptor } from '../src/index.js';
import { createApp, PLATFORMS, serve } from './nest-app.js';

interface Payment {
  id: string;
  fail?: boolean;
}

const decisions: DecisionEvent[] = [];
const handled: Payment[] = [];
const gate = createGate<Payment>({
  store: new MemoryStore(),
  eventId: 'id',
  onDecision: (event) => decisions.push(event),
});
const verify: Verify = (rawBody, headers) => headers['x-signature'] === sign(rawBody);
const GATE = Symbol('gate');

/** The error the handler throws for a payment it cannot apply. */
class PaymentDeclined extends Error {}

/** A route guard: only the partner's deliveries get through. */
@Injectable()
class PartnerOnly implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers['x-partner'] === 'acme';
  }
}

/** A route exception filter: a declined payment answers 503 with a body of its own. */
@Catch(PaymentDeclined)
class DeclinedFilter implements ExceptionFilter {
  constructor(@Inject(HttpAdapterHost) private readonly host: HttpAdapterHost) {}

  catch(_error: PaymentDeclined, context: ArgumentsHost): void {
    const res = context.switchToHttp().getResponse();
    this.host.httpAdapter.reply(res, { status: 'declined' }, 503);
  }
}

/**
 * A pipe that rejects the first delivery of each event with a 400, as a `ValidationPipe`
 * rejects a body it finds invalid, and lets its redelivery through.
 */
class RejectsFirstDelivery implements PipeTransform<Payment, Payment> {
  readonly #seen = new Set<string>();

  transform(payment: Payment): Payment {
    if (this.#seen.has(payment.id)) return payment;
    this.#seen.add(payment.id);
    throw new BadRequestException('payment rejected');
  }
}

/** The interceptor built by Nest's injector, from the gate provider. */
@Injectable()
class PaymentsWebhook extends WebhookInterceptor<Payment> {
  constructor(@Inject(GATE) gate: Gate<Payment>) {
    super({ gate, verify });
  }
}

@Controller('webhooks')
class WebhooksController {
  @Post('partner')
  @HttpCode(204)
  @UseGuards(PartnerOnly)
  @UseFilters(DeclinedFilter)
  @UseInterceptors(new WebhookInterceptor({ gate, verify }))
  async partner(@Webhook() event: WebhookEvent<Payment>): Promise<void> {
    if (event.payload.fail) throw new PaymentDeclined(event.payload.id);
    handled.push(event.payload);
  }

  @Post('observable')
  @HttpCode(204)
  @UseInterceptors(new WebhookInterceptor({ gate, verify }))
  observable(@Webhook() event: WebhookEvent<Payment>): Observable<void> {
    // Applied 300 ms later, unless Nest tears the stream down first (the client went away).
    return timer(300).pipe(map(() => void handled.push(event.payload)));
  }

  @Post('validated')
  @HttpCode(204)
  @UseInterceptors(new WebhookInterceptor({ gate, verify }))
  async validated(@Body(new RejectsFirstDelivery()) payment: Payment): Promise<void> {
    handled.push(payment);
  }

  @Post('injected')
  @HttpCode(204)
  @UseInterceptors(PaymentsWebhook)
  async injected(@Webhook() event: WebhookEvent<Payment>): Promise<void> {
    handled.push(event.payload);
  }
}

@Controller('orders')
class OrdersController {
  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): { received: unknown } {
    return { received: body };
  }
}

@Module({
  controllers: [WebhooksController, OrdersController],
  providers: [{ provide: GATE, useValue: gate }],
})
class AppModule {}

const kinds = () => decisions.map((d) => d.decision);

for (const platform of PLATFORMS) {
  describe(`Nest on ${platform}`, () => {
    let app: INestApplication;
    let url: string;
    let n = 0;
    /** A fresh event id per test: the one gate serves the whole file. */
    let id: string;

    beforeAll(async () => {
      // The platform's own body limit above the route's, so that the route's is the one seen.
      app = await createApp(platform, AppModule, { bodyLimit: 4 * 1024 * 1024 });
      ({ url } = await serve(app));
    });
    afterAll(() => app?.close());
    beforeEach(() => {
      decisions.length = 0;
      handled.length = 0;
      id = `evt_${platform}_${++n}`;
    });

    const deliver = (
      path: string,
      event: object,
      headers: Record<string, string> = {},
      signal?: AbortSignal,
    ) => {
      const body = JSON.stringify(event);
      return fetch(`${url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-signature': sign(body),
          'x-partner': 'acme',
          ...headers,
        },
        body,
        ...(signal ? { signal } : {}),
      });
    };

    it('a guard on the route runs first: a request it refuses answers 403 and claims nothing', async () => {
      const refused = await deliver('/webhooks/partner', { id }, { 'x-partner': 'someone' });
      expect(refused.status).toBe(403);
      expect(decisions).toEqual([]);
      expect((await deliver('/webhooks/partner', { id })).status).toBe(204);
      expect(handled).toEqual([{ id }]);
    });

    it("an exception filter on the route answers the handler's error, and its status releases the claim", async () => {
      const declined = await deliver('/webhooks/partner', { id, fail: true });
      expect(declined.status).toBe(503);
      expect(await declined.json()).toEqual({ status: 'declined' });
      await expect.poll(kinds).toContain('released');
      // The provider's retry runs the handler again; a redelivery after it is a duplicate.
      expect((await deliver('/webhooks/partner', { id })).status).toBe(204);
      const again = await deliver('/webhooks/partner', { id });
      expect(again.status).toBe(200); // not the route's @HttpCode(204)
      expect(await again.json()).toEqual({ status: 'duplicate' });
      expect(handled).toEqual([{ id }]);
    });

    it("a pipe that rejects the body answers 400 and releases the claim: the provider's retry runs the handler", async () => {
      const rejected = await deliver('/webhooks/validated', { id });
      expect(rejected.status).toBe(400);
      expect(await rejected.json()).toMatchObject({ statusCode: 400, message: 'payment rejected' });
      expect(handled).toEqual([]);
      await expect.poll(kinds).toEqual(['new', 'released']);
      expect(decisions[1]?.error).toBeInstanceOf(BadRequestException);
      const key = decisions[0]?.key;
      expect(key).toBeDefined();
      decisions.length = 0;
      // The same event again: the pipe lets it through, and the claim is taken anew.
      expect((await deliver('/webhooks/validated', { id })).status).toBe(204);
      expect(handled).toEqual([{ id }]);
      await expect.poll(kinds).toEqual(['new', 'done']);
      expect(decisions.map((d) => d.key)).toEqual([key, key]);
    });

    it("the interceptor can be built by Nest's injector: a subclass that injects the gate", async () => {
      expect((await deliver('/webhooks/injected', { id })).status).toBe(204);
      expect(await (await deliver('/webhooks/injected', { id })).json()).toEqual({
        status: 'duplicate',
      });
      expect(handled).toEqual([{ id }]);
    });

    it("other routes keep Nest's JSON parsing", async () => {
      const res = await fetch(`${url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'A-1', qty: 2 }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: { sku: 'A-1', qty: 2 } });
    });

    it('a body of a content type Nest does not parse as JSON reaches verify as its exact bytes', async () => {
      const body = `{ "id" : "${id}" }`;
      const res = await fetch(`${url}/webhooks/partner`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-signature': sign(body), 'x-partner': 'acme' },
        body,
      });
      expect(res.status).toBe(204);
      expect(handled).toEqual([{ id }]);
    });

    it('a content type no parser takes (octet-stream): its bytes on Express; on Fastify, its 415 and nothing claimed', async () => {
      const body = JSON.stringify({ id });
      const res = await fetch(`${url}/webhooks/partner`, {
        method: 'POST',
        headers: {
          'content-type': 'application/octet-stream',
          'x-signature': sign(body),
          'x-partner': 'acme',
        },
        body,
      });
      if (platform === 'express') {
        expect(res.status).toBe(204);
        expect(handled).toEqual([{ id }]);
      } else {
        expect(res.status).toBe(415);
        expect(handled).toEqual([]);
        expect(kinds()).toEqual([]);
      }
    });

    if (platform === 'fastify') {
      it('Fastify answers 415 to a body with no Content-Type or an octet-stream one, before the interceptor: nothing claimed, the handler does not run', async () => {
        const body = JSON.stringify({ id });
        for (const type of [undefined, 'application/octet-stream']) {
          // A byte body: fetch adds no Content-Type of its own.
          const res = await fetch(`${url}/webhooks/partner`, {
            method: 'POST',
            headers: {
              ...(type ? { 'content-type': type } : {}),
              'x-signature': sign(body),
              'x-partner': 'acme',
            },
            body: new TextEncoder().encode(body),
          });
          expect(res.status).toBe(415);
          // Fastify's error, as Nest's exception handling renders it.
          expect(await res.json()).toEqual({ statusCode: 415, message: 'Unsupported Media Type' });
        }
        expect(decisions).toEqual([]);
        expect(handled).toEqual([]);
      });
    }

    it("a handler's Observable that Nest tears down as the client goes away releases the claim", async () => {
      const client = new AbortController();
      const first = deliver('/webhooks/observable', { id }, {}, client.signal).catch((e) => e);
      await expect.poll(kinds).toContain('new');
      client.abort();
      expect(await first).toBeInstanceOf(Error);
      // Nothing reaches the wire: the end of the handler's stream is what settles the claim.
      await expect.poll(kinds).toContain('released');
      expect(handled).toEqual([]);
      expect((await deliver('/webhooks/observable', { id })).status).toBe(204);
      expect(handled).toEqual([{ id }]);
    });

    // What the HTTP suite's tests of reading the body become on Nest, whose parser reads it
    // before any interceptor (see conformance.test.ts).

    it("malformed JSON is answered 400 by Nest's parser: nothing is claimed, the handler does not run", async () => {
      const body = `{"id": "${id}",`;
      const res = await fetch(`${url}/webhooks/partner`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-signature': sign(body),
          'x-partner': 'acme',
        },
        body,
      });
      expect(res.status).toBe(400);
      expect(decisions).toEqual([]);
      expect(handled).toEqual([]);
    });

    it('a body streamed without Content-Length over the limit answers 413 and claims nothing', async () => {
      // The route's limit is the default 1 MiB: stream one valid document just over it.
      const text = JSON.stringify({ id, pad: 'x'.repeat(1_048_576) });
      const bytes = new TextEncoder().encode(text);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 65_536) {
            controller.enqueue(bytes.subarray(at, at + 65_536));
          }
          controller.close();
        },
      });
      const res = await fetch(`${url}/webhooks/partner`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-signature': sign(text),
          'x-partner': 'acme',
        },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(kinds()).toEqual(['too-large']);
      expect(handled).toEqual([]);
    });

    it('a client gone mid-body is left to the parser: nothing is claimed, and the complete delivery runs', async () => {
      const text = JSON.stringify({ id, pad: 'p'.repeat(4096) });
      const req = request(`${url}/webhooks/partner`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(text.length),
          'x-signature': sign(text),
          'x-partner': 'acme',
        },
      });
      req.on('error', () => {});
      req.write(text.slice(0, 1024));
      await new Promise((resolve) => setTimeout(resolve, 50));
      req.destroy();
      await new Promise((resolve) => req.once('close', resolve));
      // The complete delivery's decisions are the only ones: the cut-off one claimed nothing.
      expect((await deliver('/webhooks/partner', JSON.parse(text))).status).toBe(204);
      expect(handled).toHaveLength(1);
      await expect.poll(kinds).toEqual(['new', 'done']);
    });
  });

  describe(`Nest on ${platform}, created without rawBody: true`, () => {
    it('every JSON delivery answers 500 with an error that names the fix, and nothing is claimed', async () => {
      const app = await createApp(platform, AppModule, { rawBody: false });
      try {
        const { url } = await serve(app);
        decisions.length = 0;
        const body = JSON.stringify({ id: `evt_${platform}_raw` });
        const res = await fetch(`${url}/webhooks/partner`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-signature': sign(body),
            'x-partner': 'acme',
          },
          body,
        });
        expect(res.status).toBe(500);
        expect(kinds()).toEqual(['misconfigured']);
        expect(String(decisions[0]?.error)).toMatch(/rawBody: true/);
      } finally {
        await app.close();
      }
    });

    it('every form delivery answers 500 with an error that names the fix, and nothing is claimed', async () => {
      const app = await createApp(platform, AppModule, { rawBody: false });
      try {
        const { url } = await serve(app);
        decisions.length = 0;
        handled.length = 0;
        const body = `id=evt_${platform}_raw_form`;
        const res = await fetch(`${url}/webhooks/partner`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-signature': sign(body),
            'x-partner': 'acme',
          },
          body,
        });
        expect(res.status).toBe(500);
        // Nest's default exception handling answers it: the error is not on the wire.
        expect(await res.json()).toEqual({ statusCode: 500, message: 'Internal server error' });
        expect(kinds()).toEqual(['misconfigured']);
        expect(String(decisions[0]?.error)).toMatch(/rawBody: true/);
        expect(handled).toEqual([]);
      } finally {
        await app.close();
      }
    });
  });
}

// Nest on its Fastify platform: @hookgate/fastify in a Fastify scope of its own for the webhook
// route. Nest registers every controller's routes on the root Fastify instance, so a plugin
// scoped to the webhook routes cannot sit under a Nest controller; the route is registered in
// its own scope and hands the event to the same Nest provider.
import 'reflect-metadata';
import type { Gate } from '@hookgate/core';
import { hookgate, type WebhookRequest } from '@hookgate/fastify';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { GATE, gateProvider, verify } from '../gate.js';
import { OrdersController } from '../orders.controller.js';
import { type PaymentEvent, WebhooksService } from '../webhooks.service.js';

@Module({
  controllers: [OrdersController],
  providers: [WebhooksService, gateProvider],
})
export class AppModule {}

/** The app, not yet listening. */
export async function createFastifyApp(): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    logger: false,
  });
  const gate = app.get<Gate<PaymentEvent>>(GATE);
  const service = app.get(WebhooksService);
  await app.register(async (scope: FastifyInstance) => {
    await scope.register(hookgate, { gate, verify });
    // Runs once per event; a 2xx marks it done, a throw (Fastify's 500) releases it.
    scope.post('/webhooks/payments', async (request, reply) => {
      const { webhook } = request as WebhookRequest<PaymentEvent>;
      await service.apply(webhook.payload);
      return reply.code(204).send();
    });
  });
  return app;
}

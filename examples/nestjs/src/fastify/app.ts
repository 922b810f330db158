// Nest on its Fastify platform: @hookgate/nestjs's interceptor on the webhook route of a Nest
// controller. `rawBody: true` keeps the exact bytes; the interceptor is built by Nest's
// injector, so it takes the app's gate provider.
import 'reflect-metadata';
import type { Gate, WebhookEvent } from '@hookgate/core';
import { Webhook, WebhookInterceptor } from '@hookgate/nestjs';
import {
  Controller,
  HttpCode,
  Inject,
  Injectable,
  Module,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { GATE, gateProvider, verify } from '../gate.js';
import { OrdersController } from '../orders.controller.js';
import { type PaymentEvent, WebhooksService } from '../webhooks.service.js';

/** The webhook route's interceptor, with the app's gate. */
@Injectable()
export class PaymentsWebhook extends WebhookInterceptor<PaymentEvent> {
  constructor(@Inject(GATE) gate: Gate<PaymentEvent>) {
    super({ gate, verify });
  }
}

@Controller('webhooks')
export class WebhooksController {
  constructor(@Inject(WebhooksService) private readonly service: WebhooksService) {}

  // Runs once per event: duplicates, retries in flight and bad signatures are answered by the
  // interceptor before Nest reaches this handler. A 2xx marks the event done; a throw becomes
  // the answer of Nest's exception filters (500), which releases it for the provider's retry.
  @Post('payments')
  @HttpCode(204)
  @UseInterceptors(PaymentsWebhook)
  async receive(@Webhook() event: WebhookEvent<PaymentEvent>): Promise<void> {
    await this.service.apply(event.payload);
  }
}

@Module({
  controllers: [WebhooksController, OrdersController],
  providers: [WebhooksService, gateProvider],
})
export class AppModule {}

/** The app, not yet listening. `rawBody: true`: Nest's JSON parser keeps the exact bytes. */
export function createFastifyApp({ rawBody = true } = {}): Promise<NestFastifyApplication> {
  return NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    rawBody,
    logger: false,
  });
}

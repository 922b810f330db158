// Nest on its Express platform: @hookgate/express as a Nest middleware on the webhook route.
import 'reflect-metadata';
import type { Gate } from '@hookgate/core';
import { hookgate, type WebhookRequest } from '@hookgate/express';
import {
  Controller,
  HttpCode,
  Inject,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  Post,
  Req,
  RequestMethod,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { GATE, gateProvider, verify } from '../gate.js';
import { OrdersController } from '../orders.controller.js';
import { type PaymentEvent, WebhooksService } from '../webhooks.service.js';

@Controller('webhooks')
export class WebhooksController {
  constructor(@Inject(WebhooksService) private readonly service: WebhooksService) {}

  // Runs once per event: duplicates, retries in flight and bad signatures are answered by
  // hookgate before Nest reaches this handler. A 2xx marks the event done; a throw becomes
  // Nest's 500, which releases it so the provider's retry runs it again.
  @Post('payments')
  @HttpCode(204)
  async receive(@Req() req: WebhookRequest<PaymentEvent>): Promise<void> {
    await this.service.apply(req.webhook.payload);
  }
}

@Module({
  controllers: [WebhooksController, OrdersController],
  providers: [WebhooksService, gateProvider],
})
export class AppModule implements NestModule {
  constructor(@Inject(GATE) private readonly gate: Gate<PaymentEvent>) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(hookgate({ gate: this.gate, verify }))
      .forRoutes({ path: 'webhooks/payments', method: RequestMethod.POST });
  }
}

/** The app, not yet listening. `rawBody: true`: Nest's JSON parser keeps the exact bytes. */
export function createExpressApp({ rawBody = true } = {}): Promise<NestExpressApplication> {
  return NestFactory.create<NestExpressApplication>(AppModule, { rawBody, logger: false });
}

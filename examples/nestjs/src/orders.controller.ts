import { Body, Controller, HttpCode, Post } from '@nestjs/common';

/** An ordinary JSON route beside the webhook: Nest's own body parsing, no hookgate. */
@Controller('orders')
export class OrdersController {
  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): { received: unknown } {
    return { received: body };
  }
}

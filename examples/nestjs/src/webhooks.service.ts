import { Injectable } from '@nestjs/common';

/** A provider's event, as the example's deliveries carry it. */
export interface PaymentEvent {
  id: string;
  type: string;
  amount: number;
}

/** The app's business logic: a Nest provider, unaware of hookgate. */
@Injectable()
export class WebhooksService {
  /** The events applied, in order (a real app writes to its database). */
  readonly applied: PaymentEvent[] = [];
  /** Ids whose next attempt fails, as when a database is briefly down. */
  readonly failNext = new Set<string>();

  async apply(event: PaymentEvent): Promise<void> {
    if (this.failNext.delete(event.id)) throw new Error(`could not apply ${event.id}`);
    this.applied.push(event);
  }
}

import { createGate, providers } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';

/** The fields of a Stripe event this example reads. */
export interface StripeEvent {
  id: string;
  type: string;
  created: number;
  data: { object: { id: string } };
}

/**
 * One gate for the whole server process, built when the route module is first loaded: a gate
 * (and above all its store) made inside the handler would be new for every request and would
 * remember nothing. MemoryStore lives in this process only; with more than one instance
 * (serverless, several containers), use a shared store (@hookgate/ioredis, @hookgate/pg).
 */
export const gate = createGate<StripeEvent>({
  store: new MemoryStore(),
  provider: providers.stripe, // id `id`, time `created`, subject `data.object.id`, 3 days
});

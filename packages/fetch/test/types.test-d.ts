// Type tests, checked by `tsc -p tsconfig.json` at the workspace root.
import { createGate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { expectTypeOf } from 'vitest';
import { type FetchHandler, type Verify, webhookHandler } from '../src/index.js';

type Payment = { amount: number };
const gate = createGate<Payment>({ store: new MemoryStore() });

expectTypeOf<Parameters<Verify>>().toEqualTypeOf<[Uint8Array, Headers]>();

// The handler's event carries the gate's payload type; the result is a fetch handler.
const handler = webhookHandler({ gate, verify: false }, async (event, request) => {
  expectTypeOf(event).toEqualTypeOf<WebhookEvent<Payment>>();
  expectTypeOf(event.payload.amount).toEqualTypeOf<number>();
  expectTypeOf(request).toEqualTypeOf<Request>();
  return new Response(null, { status: 204 });
});
expectTypeOf(handler).toEqualTypeOf<FetchHandler>();
expectTypeOf(handler).toEqualTypeOf<(request: Request) => Promise<Response>>();

// A runtime's own Request type (Next.js's NextRequest, say) reaches the handler as it is.
interface TenantRequest extends Request {
  tenant: string;
}
const tenantHandler = webhookHandler({ gate, verify: false }, (_event, request: TenantRequest) => {
  expectTypeOf(request.tenant).toEqualTypeOf<string>();
  return new Response();
});
expectTypeOf(tenantHandler).parameter(0).toEqualTypeOf<TenantRequest>();

// It fits where runtimes take a fetch handler (extra arguments such as Bun's server or a
// Worker's env and ctx are ignored).
const serve = (_options: {
  fetch: (request: Request, server: unknown) => Response | Promise<Response>;
}) => {};
serve({ fetch: handler });

// @ts-expect-error the handler must return a Response
webhookHandler({ gate, verify: false }, async () => ({ ok: true }));

// @ts-expect-error verify is required: pass a check, or false to opt out
webhookHandler({ gate }, async () => new Response());

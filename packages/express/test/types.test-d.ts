// Type tests, checked by `tsc -p tsconfig.json` at the workspace root.
import { createGate, type WebhookEvent } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import type { Request, RequestHandler } from 'express';
import { expectTypeOf } from 'vitest';
import { hookgate, type Verify, type WebhookRequest } from '../src/index.js';

const gate = createGate<{ amount: number }>({ store: new MemoryStore() });

// `req.webhook` is on every Express request, through module augmentation.
expectTypeOf<Request['webhook']>().toEqualTypeOf<WebhookEvent | undefined>();
// A handler behind the middleware can take the typed request.
expectTypeOf<WebhookRequest<{ amount: number }>['webhook']['payload']>().toEqualTypeOf<{
  amount: number;
}>();
expectTypeOf(hookgate({ gate, verify: false })).toEqualTypeOf<RequestHandler>();
expectTypeOf<Parameters<Verify>[0]>().toEqualTypeOf<Buffer>();
hookgate({
  gate,
  verify: async (raw, headers) => raw.length > 0 && headers['x-sig'] !== undefined,
});
// @ts-expect-error verify is required: pass a check, or false to opt out
hookgate({ gate });
// @ts-expect-error inFlight is 'retry' or 'ack'
hookgate({ gate, verify: false, inFlight: 'later' });

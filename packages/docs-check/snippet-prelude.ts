/**
 * Ambient context for the TypeScript blocks in docs/ and README.md: the names a snippet may use
 * without declaring them, because the prose around it says where they come from. Each snippet
 * is a module, so a snippet that declares one of these names itself simply shadows it.
 *
 * Keep this list short. A name that only one page needs belongs in a hidden prelude comment
 * above its block (`<!-- prelude: declare const order: Order; -->`), not here.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ClaimStore, Gate } from '@hookgate/core';
import type { Express } from 'express';

declare global {
  /** A delivery's parsed JSON body, as your HTTP layer or queue consumer has it. */
  const payload: unknown;
  /** The delivery's request headers. */
  const headers: IncomingHttpHeaders;
  /** The delivery's exact body bytes. */
  const rawBody: Buffer;
  /** A gate built earlier on the page (`createGate(...)`). */
  const gate: Gate;
  /** A store built earlier on the page. */
  const store: ClaimStore;
  /** An Express application, unless the snippet makes its own `app` (Koa, Hono). */
  const app: Express;
  /** Your provider's signature check over the raw body (every binding accepts it as `verify`). */
  function verifyStripeSignature(
    rawBody: Uint8Array,
    headers: IncomingHttpHeaders | Headers,
  ): boolean | Promise<boolean>;
  /** Same, for examples that are not about one provider. */
  function verify(
    rawBody: Uint8Array,
    headers: IncomingHttpHeaders | Headers,
  ): boolean | Promise<boolean>;
  /** Same, under another name. */
  function verifySignature(
    rawBody: Uint8Array,
    headers: IncomingHttpHeaders | Headers,
  ): boolean | Promise<boolean>;
  /** Your application's work: the side effect that must happen once per event. */
  function recordPayment(payload: unknown): Promise<void>;
}

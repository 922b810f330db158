import { type ClaimStore, ErrorCode, StoreUnavailableError } from '@hookgate/core';
import { describe, it } from 'vitest';
import { LONG, type SuiteContext } from './context.js';

/** A store that cannot answer rejects with `StoreUnavailableError`, and never guesses. */
export function errorTests(ctx: SuiteContext): void {
  const { unavailable, unavailableWithinMs } = ctx.options;
  if (unavailable === undefined) return;
  const operations = {
    claim: (store, key, token) => store.claim(key, token, LONG),
    done: (store, key, token) => store.done(key, token, LONG),
    release: (store, key, token) => store.release(key, token),
    extend: (store, key, token) => store.extend(key, token, LONG),
    advance: (store, key, token) =>
      store.advance(key, {
        at: 1,
        eventKey: 'evt:a',
        token,
        holdMs: LONG,
        ttlMs: LONG,
        ties: 'drop',
      }),
    releaseHold: (store, key, token) => store.releaseHold(key, token),
    extendHold: (store, key, token) => store.extendHold(key, token, LONG),
    inspect: (store, key) => store.inspect!(key),
    forget: (store, key) => store.forget!(key),
  } satisfies Record<string, (store: ClaimStore, key: string, token: string) => Promise<unknown>>;

  describe.concurrent('errors', () => {
    for (const [name, operation] of Object.entries(operations)) {
      it(`${name} on an unreachable store rejects with StoreUnavailableError, with its cause`, async ({
        expect,
      }) => {
        const store = await unavailable();
        const started = performance.now();
        const error = await operation(store, ctx.key(), ctx.token()).then(
          (value: unknown) => {
            throw new Error(`${name} resolved with ${String(value)} on an unreachable store`);
          },
          (error: unknown) => error,
        );
        expect(performance.now() - started).toBeLessThan(unavailableWithinMs);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as StoreUnavailableError).code).toBe(ErrorCode.STORE_UNAVAILABLE);
        expect((error as StoreUnavailableError).name).toBe('StoreUnavailableError');
        expect((error as StoreUnavailableError).cause).toBeDefined();
      });
    }
  });
}

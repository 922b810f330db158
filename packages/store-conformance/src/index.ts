/**
 * The conformance suite every hookgate {@link ClaimStore} must pass. Run it from a vitest test
 * file against your store:
 *
 * ```ts
 * import { claimStoreSuite } from '@hookgate/store-conformance';
 *
 * claimStoreSuite('MyStore', () => new MyStore(nextClient()), {
 *   unavailable: () => new MyStore(clientOnAClosedPort),
 * });
 * ```
 *
 * It checks every guarantee `ClaimStore`'s documentation states: atomic claims under
 * concurrency, owner-checked `done`/`release`/`extend`, TTL expiry (with short real TTLs, so a
 * run takes a couple of seconds), the watermark's strictly-newer and tie rules, and error
 * mapping, and the optional `inspect` and `forget` (which every store should implement).
 *
 * @packageDocumentation
 */
import type { ClaimStore } from '@hookgate/core';
import { describe } from 'vitest';
import { claimTests } from './claim.js';
import { type ClaimStoreSuiteOptions, createContext, type StoreFactory } from './context.js';
import { errorTests } from './errors.js';
import { fingerprintTests } from './fingerprint.js';
import { foreignTests } from './foreign.js';
import { holdTests } from './hold.js';
import { inspectTests } from './inspect.js';
import { ownershipTests } from './ownership.js';
import { ttlTests } from './ttl.js';
import { watermarkTests } from './watermark.js';

export type { ClaimStoreSuiteOptions, StoreFactory } from './context.js';

/**
 * Register the conformance suite for a {@link ClaimStore} under `describe(name)`, one block per
 * concern: `claim`, `ownership`, `fingerprint`, `ttl`, `watermark`, `hold`, `foreign records`,
 * `inspect and forget` and (given
 * `options.unavailable`) `errors`.
 *
 * @param name - what the suite is reported under, e.g. `'IoRedisStore (cluster)'`
 * @param factory - makes a store; successive stores share the data, over separate connections
 * where the store has them (see {@link StoreFactory})
 */
export function claimStoreSuite(
  name: string,
  factory: StoreFactory,
  options: ClaimStoreSuiteOptions = {},
): void {
  const ctx = createContext(factory, options);
  describe(name, () => {
    claimTests(ctx);
    ownershipTests(ctx);
    fingerprintTests(ctx);
    ttlTests(ctx);
    watermarkTests(ctx);
    holdTests(ctx);
    foreignTests(ctx);
    inspectTests(ctx);
    errorTests(ctx);
  });
}

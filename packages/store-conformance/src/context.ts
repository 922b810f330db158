import { randomUUID } from 'node:crypto';
import type { ClaimStore } from '@hookgate/core';

/**
 * Makes a store for the suite. Every store it returns must share the same data (the same
 * server, or the same in-memory map). Where the store talks over connections, return stores
 * over different connections on successive calls (e.g. round robin over a pool of clients),
 * so that the concurrency tests race separate connections.
 */
export type StoreFactory = () => ClaimStore | Promise<ClaimStore>;

/** Options of {@link claimStoreSuite}. */
export interface ClaimStoreSuiteOptions {
  /**
   * Makes a store whose backend cannot be reached (a refused port, a closed client, a paused
   * server). With it, the `errors` tests check that every operation rejects with
   * `StoreUnavailableError`; without it they are not registered.
   */
  unavailable?: StoreFactory;
  /**
   * How long an operation on the unavailable store may take to reject, in ms: the store's
   * deadline plus slack.
   * @default 10_000
   */
  unavailableWithinMs?: number;
  /** How many stores race in the concurrency tests. @default 8 */
  contenders?: number;
  /**
   * The start of every key the suite writes. Keys are unique per test (a random UUID follows),
   * so the suite can run against a shared server and leaves only expiring records behind.
   * @default 'hookgate-conformance'
   */
  keyPrefix?: string;
}

/** @internal What every concern file gets. */
export interface SuiteContext {
  /** One store from the factory. */
  store(): Promise<ClaimStore>;
  /** `n` stores from the factory (separate connections where the factory gives them). */
  stores(n?: number): Promise<ClaimStore[]>;
  /** A fresh key that no other test uses. */
  key(label?: string): string;
  /** A fresh owner token. */
  token(): string;
  readonly options: ClaimStoreSuiteOptions & { contenders: number; unavailableWithinMs: number };
}

/** A TTL that outlives any test. */
export const LONG = 60_000;
/** A TTL that expires during a test. */
export const SHORT = 100;
/** Long enough after {@link SHORT} that the record has surely expired. */
export const PAST_SHORT = 300;
/**
 * A TTL that must not run out between two consecutive operations, even on a busy CI machine,
 * and still expires during the test.
 */
export const MEDIUM = 600;
/** Long enough after {@link MEDIUM} that the record has surely expired. */
export const PAST_MEDIUM = 900;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** @internal */
export function createContext(
  factory: StoreFactory,
  options: ClaimStoreSuiteOptions,
): SuiteContext {
  const {
    contenders = 8,
    unavailableWithinMs = 10_000,
    keyPrefix = 'hookgate-conformance',
  } = options;
  const resolved = { ...options, contenders, unavailableWithinMs };
  return {
    store: async () => factory(),
    stores: (n = contenders) => Promise.all(Array.from({ length: n }, async () => factory())),
    key: (label = 'key') => `${keyPrefix}:${label}:${randomUUID()}`,
    token: () => randomUUID(),
    options: resolved,
  };
}

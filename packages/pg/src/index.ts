/**
 * PostgreSQL for hookgate: {@link PostgresStore}, a durable `ClaimStore` whose `transaction()`
 * makes a handler's database effects happen exactly once, and {@link PostgresLedger}, the same
 * guarantee behind any store; {@link PostgresAuditLog}, an append-only log of every decision.
 * Over a node-postgres (`pg` 8) `Pool` you create and own.
 *
 * @packageDocumentation
 * @module @hookgate/pg
 */
export {
  type AuditLogStats,
  PostgresAuditLog,
  type PostgresAuditLogOptions,
} from './audit.js';
export type { PgPool, PgPoolClient, PgQueryable, PgQueryConfig, PgResult } from './client.js';
export { PostgresLedger, type PostgresLedgerOptions } from './ledger.js';
export { PostgresStore, type PostgresStoreOptions } from './store.js';

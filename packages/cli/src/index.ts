/**
 * The `hookgate` command line: inspect, forget and count the event records a hookgate gate
 * keeps in Redis or PostgreSQL, and watch the decisions a `PostgresAuditLog` writes. Installed
 * as the `hookgate` binary; `main` runs it from code.
 *
 * @packageDocumentation
 * @module @hookgate/cli
 */
export { ExitCode, main } from './main.js';

/**
 * The statements of the PostgreSQL store, one per operation, for a table name already checked.
 * Every expiry is judged by the database clock (`clock_timestamp()`, not the transaction's
 * `now()`), and every decision is a single statement: a write that decides, and, in the same
 * statement, a read of the row it left alone that says why (processing, done, stale, held,
 * another kind of record). The read uses the statement's snapshot, so when a concurrent commit
 * hides the row from it, the statement returns no row; each caller says what that means. The
 * claim and the done first try a plainer statement for their usual case (`claimNew`: a key with
 * no row; `doneOwn`: a row still the claim's own) and send the deciding one only when it
 * touched no row (the claim, only when a read of the live row found none either).
 *
 * A row is a claim (`kind` `p` processing or `d` done, `token` its owner, `fingerprint`) or a
 * subject's watermark (`kind` `w`: `at`, `event_key`, and while an event holds the subject,
 * `token` and `hold_until`). `expires_at` ends either: an expired row is an absent one.
 */
import { lockTimeout } from './client.js';

/** `<n> ms from now`, on the database clock. */
const FROM_NOW = (param: string) =>
  `clock_timestamp() + ${param}::bigint * interval '1 millisecond'`;

/** The statements for table `t` (a quoted, possibly schema-qualified name). */
export function statements(t: string, indexName: string) {
  return {
    setup: (lockKey: string, lockTimeoutMs: number) => `
      SET LOCAL lock_timeout = ${lockTimeout(lockTimeoutMs)};
      SELECT pg_advisory_xact_lock(hashtext('${lockKey}'));
      CREATE TABLE IF NOT EXISTS ${t} (
        key         text        PRIMARY KEY,
        kind        text        NOT NULL CHECK (kind IN ('p', 'd', 'w')),
        token       text,
        fingerprint text,
        at          bigint,
        event_key   text,
        hold_until  timestamptz,
        expires_at  timestamptz NOT NULL
      );
      CREATE INDEX IF NOT EXISTS ${indexName} ON ${t} (expires_at);`,

    /**
     * $1 key, $2 token, $3 ttl ms, $4 fingerprint or null. The claim of a key with no row at all,
     * as nearly every new delivery finds it: a plain insert (a sixth cheaper than `claim`,
     * measured), one row or none. None: `inspect`, which locks nothing, answers for a live row
     * (a duplicate), and `claim` decides when there is none (an expired row to take over).
     */
    claimNew: `
      INSERT INTO ${t} (key, kind, token, fingerprint, expires_at)
      VALUES ($1, 'p', $2, $4, ${FROM_NOW('$3')})
      ON CONFLICT (key) DO NOTHING`,

    /**
     * $1 key, $2 token, $3 ttl ms, $4 fingerprint or null. Rows: `a` acquired, or the row found.
     * After `claimNew`, with the same values, when that inserted nothing.
     */
    claim: `
      WITH claimed AS (
        INSERT INTO ${t} AS c (key, kind, token, fingerprint, expires_at)
        VALUES ($1, 'p', $2, $4, ${FROM_NOW('$3')})
        ON CONFLICT (key) DO UPDATE
          SET kind = 'p', token = EXCLUDED.token, fingerprint = EXCLUDED.fingerprint,
              at = NULL, event_key = NULL, hold_until = NULL, expires_at = EXCLUDED.expires_at
          WHERE c.expires_at <= clock_timestamp()
        RETURNING 1
      )
      SELECT 'a' AS kind, NULL AS token, NULL AS fingerprint, true AS live FROM claimed
      UNION ALL
      SELECT kind, token, fingerprint, expires_at > clock_timestamp() FROM ${t}
      WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,

    /**
     * $1 key, $2 token, $3 ttl ms, $4 fingerprint or null. The done of a claim whose row is still
     * this token's, as nearly every done finds it: a plain `UPDATE` (a third cheaper than `done`,
     * measured), one row or none. None: `done` follows and decides (the row expired and went,
     * another worker took it over, it was never written, a watermark). The same `SET` as `done`
     * on a row of this token. The row keeps its fingerprint when none is given, expired or not:
     * it is this token's claim's (a handler's transaction marks done without one).
     */
    doneOwn: `
      UPDATE ${t}
      SET kind = 'd',
          fingerprint = COALESCE($4::text, fingerprint),
          at = NULL, event_key = NULL, hold_until = NULL, expires_at = ${FROM_NOW('$3')}
      WHERE key = $1 AND kind IN ('p', 'd') AND token = $2`,

    /**
     * $1 key, $2 token, $3 ttl ms, $4 fingerprint or null. Code 1 done, 0 another's, -1 a
     * watermark. After `doneOwn`, with the same values, when that found no row; the two are
     * also the fence of a handler's transaction: the row they write stays locked until commit.
     */
    done: `
      WITH marked AS (
        INSERT INTO ${t} AS c (key, kind, token, fingerprint, expires_at)
        VALUES ($1, 'd', $2, $4, ${FROM_NOW('$3')})
        ON CONFLICT (key) DO UPDATE
          SET kind = 'd', token = EXCLUDED.token,
              fingerprint = CASE WHEN c.kind IN ('p', 'd') AND c.token = EXCLUDED.token
                                   THEN COALESCE(EXCLUDED.fingerprint, c.fingerprint)
                                 WHEN c.expires_at <= clock_timestamp() THEN EXCLUDED.fingerprint
                                 ELSE COALESCE(EXCLUDED.fingerprint, c.fingerprint) END,
              at = NULL, event_key = NULL, hold_until = NULL, expires_at = EXCLUDED.expires_at
          WHERE c.expires_at <= clock_timestamp()
             OR (c.kind IN ('p', 'd') AND c.token = EXCLUDED.token)
        RETURNING 1
      )
      SELECT 1 AS code FROM marked
      UNION ALL
      SELECT CASE WHEN kind = 'w' THEN -1 ELSE 0 END FROM ${t}
      WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM marked)`,

    /**
     * $1 key, $2 token. Code 1 free of our claim, 0 done or another's, -1 a watermark, 2 our claim
     * as the statement's snapshot saw it, changed by a concurrent commit before the `DELETE`
     * could take it (the store asks again).
     */
    release: `
      WITH gone AS (
        DELETE FROM ${t} WHERE key = $1 AND kind = 'p' AND token = $2 RETURNING 1
      )
      SELECT 1 AS code FROM gone
      UNION ALL
      SELECT CASE WHEN expires_at <= clock_timestamp() THEN 1 WHEN kind = 'w' THEN -1
                  WHEN kind = 'p' AND token = $2 THEN 2 ELSE 0 END
      FROM ${t} WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM gone)`,

    /** $1 key, $2 token, $3 ttl ms. Code 1 extended, 0 absent, done or another's, -1 a watermark. */
    extend: `
      WITH kept AS (
        UPDATE ${t} SET expires_at = ${FROM_NOW('$3')}
        WHERE key = $1 AND kind = 'p' AND token = $2 AND expires_at > clock_timestamp()
        RETURNING 1
      )
      SELECT 1 AS code FROM kept
      UNION ALL
      SELECT CASE WHEN kind = 'w' AND expires_at > clock_timestamp() THEN -1 ELSE 0 END
      FROM ${t} WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM kept)`,

    /**
     * $1 key, $2 at, $3 event key, $4 token, $5 hold ms, $6 watermark ttl ms, $7 ties. Code 1
     * applied (the watermark moved and is held by $4), 0 stale, 2 held, -1 a claim record.
     */
    advance: `
      WITH moved AS (
        INSERT INTO ${t} AS c (key, kind, token, at, event_key, hold_until, expires_at)
        VALUES ($1, 'w', $4, $2, $3, ${FROM_NOW('$5')}, ${FROM_NOW('greatest($5::bigint, $6::bigint)')})
        ON CONFLICT (key) DO UPDATE
          SET kind = 'w', token = EXCLUDED.token, fingerprint = NULL, at = EXCLUDED.at,
              event_key = EXCLUDED.event_key, hold_until = EXCLUDED.hold_until,
              expires_at = EXCLUDED.expires_at
          WHERE c.expires_at <= clock_timestamp()
             OR (c.kind = 'w'
                 AND (c.at < EXCLUDED.at
                      OR (c.at = EXCLUDED.at AND ($7 = 'apply' OR c.event_key = EXCLUDED.event_key)))
                 AND (c.hold_until IS NULL OR c.hold_until <= clock_timestamp()
                      OR c.event_key = EXCLUDED.event_key))
        RETURNING 1
      )
      SELECT 1 AS code FROM moved
      UNION ALL
      SELECT CASE WHEN kind <> 'w' THEN -1
                  WHEN at > $2 OR (at = $2 AND $7 <> 'apply' AND event_key <> $3) THEN 0
                  ELSE 2 END
      FROM ${t}
      WHERE key = $1 AND expires_at > clock_timestamp() AND NOT EXISTS (SELECT 1 FROM moved)`,

    /** $1 key, $2 token. Code 1 free of our hold, 0 another holds it, -1 a claim record. */
    releaseHold: `
      WITH freed AS (
        UPDATE ${t} SET token = NULL, hold_until = NULL
        WHERE key = $1 AND kind = 'w' AND token = $2 AND expires_at > clock_timestamp()
        RETURNING 1
      )
      SELECT 1 AS code FROM freed
      UNION ALL
      SELECT CASE WHEN kind <> 'w' THEN -1
                  WHEN token IS NOT NULL AND hold_until > clock_timestamp() THEN 0
                  ELSE 1 END
      FROM ${t}
      WHERE key = $1 AND expires_at > clock_timestamp() AND NOT EXISTS (SELECT 1 FROM freed)`,

    /** $1 key, $2 token, $3 hold ms. Code 1 extended, 0 not ours or no watermark, -1 a claim. */
    extendHold: `
      WITH kept AS (
        UPDATE ${t} SET hold_until = ${FROM_NOW('$3')},
                        expires_at = greatest(expires_at, ${FROM_NOW('$3')})
        WHERE key = $1 AND kind = 'w' AND token = $2 AND expires_at > clock_timestamp()
        RETURNING 1
      )
      SELECT 1 AS code FROM kept
      UNION ALL
      SELECT CASE WHEN kind <> 'w' THEN -1 ELSE 0 END FROM ${t}
      WHERE key = $1 AND expires_at > clock_timestamp() AND NOT EXISTS (SELECT 1 FROM kept)`,

    /**
     * $1 key, $2 token. Whether the fence of $2's transaction committed: the row is done by $2.
     * `FOR SHARE` waits for a transaction that still holds the row, so the answer is final.
     */
    landed: `
      SELECT kind = 'd' AND token = $2 AS done FROM ${t} WHERE key = $1 FOR SHARE`,

    /** $1 key. The live row, if any, and the ms it has left. */
    inspect: `
      SELECT kind, token, fingerprint, at, event_key,
             ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint AS ttl_ms
      FROM ${t} WHERE key = $1 AND expires_at > clock_timestamp()`,

    /** $1 key. Deletes the row, whoever owns it; `live` is whether it had not expired. */
    forget: `
      DELETE FROM ${t} WHERE key = $1 RETURNING expires_at > clock_timestamp() AS live`,

    /** $1 batch size. Deletes up to $1 expired rows, skipping rows another session locks. */
    sweep: `
      DELETE FROM ${t} WHERE key IN (
        SELECT key FROM ${t} WHERE expires_at <= clock_timestamp()
        LIMIT $1 FOR UPDATE SKIP LOCKED
      )`,
  };
}

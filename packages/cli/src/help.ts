/** The `--help` texts, one per command, and the top level's. */

const DOCS = 'https://github.com/hookgate/hookgate/blob/main/docs/cli.md';

const STORE = `Store (exactly one):
  --redis <url>        redis://[user:password@]host:port[/db] or rediss://… (one node)
  --postgres <url>     postgres://user:password@host:port/database
Options:
  --namespace <ns>     the gate's namespace (default: hookgate)
  --table <name>       the PostgresStore table, with --postgres (default: hookgate_claims)
  --timeout <ms>       deadline of the connection and of each store call (default: 5000)
  --json               print JSON on stdout instead of text
  -h, --help           print this help`;

const TARGET = `<id|key>: an event key as Outcome.key gives it (evt:… or dig:…), or else a
provider's event id (evt_1NG8Du2eZvKYlo2C, a webhook-id), keyed exactly as the gate keys ids
(a long or odd id is hashed).`;

/** The exit codes, as a command's help lists them; `noRecord` says when it exits 3. */
function exits(noRecord?: string): string {
  return [
    'Exit codes:',
    '  0  done',
    '  1  store error: unreachable, no answer in time, a value hookgate did not write',
    '  2  usage error: unknown command or flag, missing argument, bad value',
    ...(noRecord === undefined ? [] : [`  3  ${noRecord}`]),
  ].join('\n');
}

/** `hookgate --help`. */
export const TOP = `hookgate: look at and fix hookgate's event records in Redis or PostgreSQL,
and follow its decisions.

Usage:
  hookgate inspect <id|key> (--redis <url> | --postgres <url>) [options]
  hookgate forget <id|key> (--redis <url> | --postgres <url>) [--yes] [options]
  hookgate stats (--redis <url> | --postgres <url>) [--limit <n>] [options]
  hookgate watch --postgres <url> [--namespace <ns>] [--key <id|key>] [--decision <d,…>] [options]
  hookgate <command> --help
  hookgate --version

Commands:
  inspect   the state of one event: absent, processing or done; time left; fingerprint
  forget    delete one event's record, so that a redelivery of it runs again
  stats     count the namespace's records by state
  watch     print the gate's decisions as they are written to the PostgresAuditLog table

${TARGET}

${exits('no record of the event (inspect, forget)')}
Docs: ${DOCS}`;

/** The help of each command. */
export const COMMANDS = {
  inspect: `Usage: hookgate inspect <id|key> (--redis <url> | --postgres <url>) [options]

Print what the store holds for one event: absent, processing (a claim in flight) or done, the
time the record has left, and its payload fingerprint when it has one. Changes nothing.

${TARGET}

${STORE}

${exits('the event is absent')}
Docs: ${DOCS}`,

  forget: `Usage: hookgate forget <id|key> (--redis <url> | --postgres <url>) [--yes] [options]

Delete one event's record, whoever owns it, so that a redelivery (or a replay you ask the
provider for) runs again. Shows the record and asks "Forget <key>? [y/N]" on a terminal;
without a terminal it needs --yes. With the sequence guard, the subject's watermark stays: a
replay of an event older than its subject's newest is stale.

${TARGET}

  -y, --yes            do not ask; required when stdin is not a terminal
${STORE}

${exits('no record: nothing to forget')}
Without --yes when stdin is not a terminal: exit 2. Answering no: exit 0, nothing changed.
Docs: ${DOCS}`,

  stats: `Usage: hookgate stats (--redis <url> | --postgres <url>) [--limit <n>] [options]

Count the namespace's live records by state: processing, done, watermark (a subject's
sequence guard) and other (values that do not read as hookgate's records).

Redis: SCAN MATCH <namespace>:* COUNT 1000, and a pipelined GET per key found. SCAN walks
the whole keyspace, however few keys match: on a large database run it on a replica.
PostgreSQL: one SELECT … GROUP BY kind over the table.

  --limit <n>          with --redis, stop after reading n keys (default: 100000); the
                       result then says it is truncated
${STORE}

${exits()}
Docs: ${DOCS}`,

  watch: `Usage: hookgate watch --postgres <url> [options]

Follow the decision log a PostgresAuditLog (@hookgate/pg) writes: print each decision of the
gates (new, done, duplicate, released, invalid, …) as it is committed, one line each, until
Ctrl-C (SIGINT) or SIGTERM, then exit 0. Redis stores keep no log: there is nothing to watch.

Text: time, decision, key, provider, then reason, error, duration. --json: one JSON object per
line (NDJSON) with the row's columns that are not null: id, at, decision, namespace, key,
occurredAt, durationMs, reason, error, writer, seq, ….

It polls: SELECT … WHERE id > <last id seen> ORDER BY id LIMIT 1000, every --interval ms
(at once again after a full page). A transaction may commit a row with an id below one
already printed (ids are taken in order, committed in any order): watch reads the ids it
skipped again for 60 s; such a late row is printed when it commits, after rows with higher
ids. It says so on stderr when it stops waiting for an id that a transaction still open may
write.

  --postgres <url>     postgres://user:password@host:port/database
  --table <name>       the PostgresAuditLog table (default: hookgate_decisions)
  --namespace <ns>     only this namespace's decisions (default: every namespace)
  --key <id|key>       only this event's decisions: an event key (evt:…, dig:…) or an event id
  --decision <d,…>     only these decisions; repeat the flag or separate them with commas
  --since-id <n>       start after the row with this id (the "id" of --json)
  --from-start         start at the first row of the table
                       (default: only decisions written from now on)
  --interval <ms>      the pause after a poll that read fewer than 1000 rows (default: 1000)
  --timeout <ms>       deadline of the connection and of each query (default: 5000)
  --json               print one JSON object per decision and line
  -h, --help           print this help

Exit codes:
  0  stopped by SIGINT or SIGTERM (or stdout closed)
  1  cannot connect; the table is missing (PostgresAuditLog.setup() creates it) or cannot
     be read. A poll that fails once connected (a lost connection, a timeout) is reported on
     stderr and tried again.
  2  usage error: unknown flag, extra argument, bad value, no --postgres, --redis,
     --since-id with --from-start
Docs: ${DOCS}`,
} as const;

/** A command of the `hookgate` binary. */
export type Command = keyof typeof COMMANDS;

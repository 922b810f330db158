import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ErrorCode as HookgateErrorCode, type Inspection } from '@hookgate/core';
import {
  checkNamespace,
  decisionList,
  eventKey,
  positiveInteger,
  refuseMalformedKey,
  wholeNumber,
} from './args.js';
import { type Connection, connect, type Stats, UsageError } from './connect.js';
import { COMMANDS, type Command, TOP } from './help.js';
import { checkTable, watch } from './watch.js';
import { escapeControls, safeJson } from './watch-output.js';

/** The exit codes of `hookgate`. */
export const ExitCode = {
  /**
   * 0: the command did what it was asked (for `forget`, also when the answer was no; for
   * `watch`, stopped by SIGINT or SIGTERM).
   */
  OK: 0,
  /**
   * 1: the store could not be reached, did not answer in time, failed, or holds a value
   * hookgate did not write under the key.
   */
  STORE_ERROR: 1,
  /**
   * 2: an unknown command or flag, a missing or extra argument, a bad value; `forget` without
   * `--yes` when stdin is not a terminal; `watch` with `--redis`.
   */
  USAGE: 2,
  /** 3: the event has no record (`inspect`: absent; `forget`: nothing to delete). */
  NO_RECORD: 3,
} as const;

/** One of the {@link ExitCode} values. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

const STORE_OPTIONS = {
  redis: { type: 'string' },
  postgres: { type: 'string' },
  namespace: { type: 'string', default: 'hookgate' },
  table: { type: 'string' },
  timeout: { type: 'string', default: '5000' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

const OPTIONS = {
  inspect: STORE_OPTIONS,
  forget: { ...STORE_OPTIONS, yes: { type: 'boolean', short: 'y', default: false } },
  stats: { ...STORE_OPTIONS, limit: { type: 'string' } },
} as const satisfies Record<Exclude<Command, 'watch'>, ParseArgsConfig['options']>;

/** `watch` reads a log, not the claims: no namespace by default, and flags of its own. */
const WATCH_OPTIONS = {
  redis: { type: 'string' },
  postgres: { type: 'string' },
  table: { type: 'string', default: 'hookgate_decisions' },
  namespace: { type: 'string' },
  key: { type: 'string' },
  decision: { type: 'string', multiple: true },
  'since-id': { type: 'string' },
  'from-start': { type: 'boolean', default: false },
  interval: { type: 'string', default: '1000' },
  timeout: { type: 'string', default: '5000' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

/** The values every command's flags parse to. */
interface Flags {
  redis?: string | undefined;
  postgres?: string | undefined;
  namespace: string;
  table?: string | undefined;
  timeout: string;
  json: boolean;
  help: boolean;
  yes?: boolean;
  limit?: string;
}

/**
 * Run the `hookgate` command line: `argv` without the node and script paths
 * (`process.argv.slice(2)`). Writes to `process.stdout` and `process.stderr`, reads a
 * confirmation from `process.stdin`, and never throws: every failure is a message on stderr
 * and an exit code. `watch` runs until SIGINT or SIGTERM, which it listens for while it runs.
 * @returns the exit code, one of {@link ExitCode}
 */
export async function main(argv: readonly string[]): Promise<ExitCode> {
  const [first, ...rest] = argv;
  if (first === 'help') return help(rest[0]);
  if (first === undefined || first.startsWith('-')) return topLevel(argv);
  if (!(first in COMMANDS)) {
    return usage(`unknown command '${first}' (commands: ${Object.keys(COMMANDS).join(', ')})`);
  }
  if (first === 'watch') return watchCommand(rest);
  const command = first as Exclude<Command, 'watch'>;
  let flags: Flags;
  let positionals: string[];
  try {
    ({ values: flags, positionals } = parseArgs({
      args: rest,
      options: OPTIONS[command],
      allowPositionals: true,
      strict: true,
    }) as { values: Flags; positionals: string[] });
  } catch (error) {
    return usage(messageOf(error), command);
  }
  if (flags.help) {
    print(COMMANDS[command]);
    return ExitCode.OK;
  }
  try {
    return await runCommand(command, flags, positionals);
  } catch (error) {
    if (error instanceof UsageError || isInvalidOptions(error)) {
      return usage(messageOf(error), command);
    }
    process.stderr.write(`hookgate: ${escapeControls(messageOf(error))}\n`);
    return ExitCode.STORE_ERROR;
  }
}

function topLevel(argv: readonly string[]): ExitCode {
  let values: { help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
      strict: true,
    }));
  } catch (error) {
    return usage(messageOf(error));
  }
  if (values.version) {
    print(version());
    return ExitCode.OK;
  }
  if (values.help) {
    print(TOP);
    return ExitCode.OK;
  }
  return usage('no command given');
}

function help(command: string | undefined): ExitCode {
  if (command === undefined) {
    print(TOP);
    return ExitCode.OK;
  }
  if (!(command in COMMANDS)) return usage(`unknown command '${command}'`);
  print(COMMANDS[command as Command]);
  return ExitCode.OK;
}

async function runCommand(
  command: Exclude<Command, 'watch'>,
  flags: Flags,
  positionals: string[],
): Promise<ExitCode> {
  const wanted = command === 'stats' ? 0 : 1;
  if (positionals.length !== wanted) {
    throw new UsageError(
      wanted === 0
        ? `stats takes no argument (got ${positionals.join(' ')})`
        : `${command} takes one <id|key> (got ${positionals.length})`,
    );
  }
  const argument = positionals[0];
  // Refused before connecting, as the gate would refuse it: a key it could not have made.
  if (argument !== undefined) refuseMalformedKey(argument, '');
  if ((flags.redis === undefined) === (flags.postgres === undefined)) {
    throw new UsageError('give exactly one of --redis <url> and --postgres <url>');
  }
  const timeoutMs = positiveInteger('timeout', flags.timeout, 2_147_483_647);
  const limit = positiveInteger('limit', flags.limit ?? '100000');
  if (flags.limit !== undefined && flags.postgres !== undefined) {
    throw new UsageError('--limit goes with --redis only (PostgreSQL counts in one query)');
  }
  // Refuse before connecting: nothing can be asked without a terminal.
  if (command === 'forget' && !flags.yes && !process.stdin.isTTY) {
    throw new UsageError('forget asks for confirmation: pass --yes when stdin is not a terminal');
  }
  const connection = await connect({
    redis: flags.redis,
    postgres: flags.postgres,
    namespace: flags.namespace,
    table: flags.table,
    timeoutMs,
  });
  try {
    if (command === 'stats') return printStats(await connection.stats(limit), flags.json);
    const target = /^(evt|dig):/.test(argument!) ? argument! : { id: argument! };
    const inspection = await connection.gate.inspect(target);
    if (command === 'inspect') return printInspection(inspection, flags);
    return await forget(connection, inspection, flags);
  } finally {
    await connection.close();
  }
}

async function watchCommand(args: string[]): Promise<ExitCode> {
  let parsed: ReturnType<typeof parseWatch>;
  try {
    parsed = parseWatch(args);
  } catch (error) {
    return usage(messageOf(error), 'watch');
  }
  const { values: flags, positionals } = parsed;
  if (flags.help) {
    print(COMMANDS.watch);
    return ExitCode.OK;
  }
  try {
    if (positionals.length > 0) {
      throw new UsageError(`watch takes no argument (got ${positionals.join(' ')})`);
    }
    if (flags.redis !== undefined) {
      throw new UsageError(
        'watch needs the PostgreSQL decision log (--postgres <url>): Redis stores keep no log of decisions',
      );
    }
    if (flags.postgres === undefined) {
      throw new UsageError(
        'watch reads the decision log of a PostgresAuditLog: give --postgres <url>',
      );
    }
    if (flags['since-id'] !== undefined && flags['from-start']) {
      throw new UsageError('give --since-id or --from-start, not both');
    }
    await watch({
      postgres: flags.postgres,
      table: checkTable(flags.table),
      namespace: flags.namespace === undefined ? undefined : checkNamespace(flags.namespace),
      key: flags.key === undefined ? undefined : eventKey(flags.key),
      decisions: flags.decision === undefined ? undefined : decisionList(flags.decision),
      sinceId: flags['from-start']
        ? 0
        : flags['since-id'] === undefined
          ? undefined
          : wholeNumber('since-id', flags['since-id']),
      intervalMs: positiveInteger('interval', flags.interval, 2_147_483_647),
      json: flags.json,
      timeoutMs: positiveInteger('timeout', flags.timeout, 2_147_483_647),
    });
    return ExitCode.OK;
  } catch (error) {
    if (error instanceof UsageError) return usage(messageOf(error), 'watch');
    process.stderr.write(`hookgate: ${escapeControls(messageOf(error))}\n`);
    return ExitCode.STORE_ERROR;
  }
}

function parseWatch(args: string[]) {
  return parseArgs({ args, options: WATCH_OPTIONS, allowPositionals: true, strict: true });
}

function printInspection(inspection: Inspection, flags: Flags): ExitCode {
  if (flags.json) {
    print(safeJson(inspection, 2));
  } else {
    const rows: [string, string][] = [
      ['key', inspection.key],
      ['namespace', flags.namespace],
      ['state', inspection.state],
    ];
    if (inspection.ttlMs !== undefined) rows.push(['expires in', duration(inspection.ttlMs)]);
    if (inspection.fingerprint !== undefined) rows.push(['fingerprint', inspection.fingerprint]);
    if (inspection.watermark !== undefined) {
      const { at, key } = inspection.watermark;
      rows.push(['watermark', `${new Date(at).toISOString()} (${key})`]);
    }
    print(table(rows));
  }
  return inspection.state === 'absent' ? ExitCode.NO_RECORD : ExitCode.OK;
}

async function forget(
  connection: Connection,
  inspection: Inspection,
  flags: Flags,
): Promise<ExitCode> {
  const { key, state } = inspection;
  const report = (forgotten: boolean) => {
    if (flags.json) print(safeJson({ key, forgotten }, 2));
  };
  if (state === 'absent') {
    report(false);
    if (!flags.json)
      print(`${key} has no record in namespace ${flags.namespace}: nothing to forget`);
    return ExitCode.NO_RECORD;
  }
  const ttl = inspection.ttlMs === undefined ? '' : `, expires in ${duration(inspection.ttlMs)}`;
  const warning =
    state === 'processing'
      ? `\n${key} is in flight: forgetting it lets a redelivery run beside the first attempt.`
      : '';
  if (!flags.yes) {
    process.stderr.write(`${key}: ${state}${ttl} (namespace ${flags.namespace})${warning}\n`);
    if (!(await confirm(`Forget ${key}? [y/N] `))) {
      report(false);
      if (!flags.json) print('Nothing was forgotten.');
      return ExitCode.OK;
    }
  } else if (warning !== '') {
    process.stderr.write(`${warning.slice(1)}\n`);
  }
  const forgotten = await connection.gate.forget(key);
  report(forgotten);
  if (!forgotten) {
    // The record expired between the look and the delete.
    if (!flags.json) print(`${key} has no record any more: nothing to forget`);
    return ExitCode.NO_RECORD;
  }
  if (!flags.json) {
    print(`Forgot ${key} (was ${state}): a redelivery of it will run again.`);
  }
  return ExitCode.OK;
}

function printStats(stats: Stats, json: boolean): ExitCode {
  if (json) {
    print(safeJson(stats, 2));
    return ExitCode.OK;
  }
  const rows: [string, string][] = [
    ['namespace', stats.namespace],
    ['processing', String(stats.processing)],
    ['done', String(stats.done)],
    ['watermark', String(stats.watermark)],
    ['other', String(stats.other)],
    ['total', String(stats.total)],
  ];
  if (stats.truncated) rows.push(['truncated', 'yes: the scan stopped at --limit keys']);
  print(table(rows));
  return ExitCode.OK;
}

/** Ask on the terminal; only `y` or `yes` is a yes; Ctrl-C or a closed stdin is a no. */
function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  return new Promise<boolean>((resolve) => {
    prompt.once('close', () => resolve(false));
    // Ctrl-C at the prompt is a no (without a listener readline would pause, and wait).
    prompt.once('SIGINT', () => prompt.close());
    prompt.question(question, (answer) => {
      resolve(/^y(es)?$/i.test(answer.trim()));
      prompt.close();
    });
  });
}

/** `ms` as `3d 4h 5m 6s` (from the largest unit that is not zero), or `850 ms`. */
function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const parts: string[] = [];
  let left = ms;
  for (const [unit, size] of units) {
    const count = Math.floor(left / size);
    left -= count * size;
    if (count > 0 || parts.length > 0) parts.push(`${count}${unit}`);
  }
  return parts.join(' ');
}

function table(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return rows.map(([label, value]) => label.padEnd(width) + escapeControls(value)).join('\n');
}

function usage(message: string, command?: Command): ExitCode {
  const helpCommand = command === undefined ? 'hookgate --help' : `hookgate ${command} --help`;
  process.stderr.write(`hookgate: ${escapeControls(message)}\nRun '${helpCommand}' for usage.\n`);
  return ExitCode.USAGE;
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function version(): string {
  const url = new URL('../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

function isInvalidOptions(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === HookgateErrorCode.INVALID_OPTIONS
  );
}

/** The error's message, without the `hookgate: ` that every line here starts with anyway. */
function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^hookgate: /, '');
}

import { connect } from 'node:net';

/** A RESP2 reply: simple and bulk strings as `string`, integers as `number`, nil as `null`. */
export type Reply = string | number | null | ReplyError | Reply[];

/** An error reply (`-ERR …`), returned rather than thrown so that a caller can expect one. */
export class ReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplyError';
  }
}

/** The port of the machine's shared Redis: the harness refuses to talk to it. */
export const SHARED_REDIS_PORT = 6379;

/** @internal Throw if `port` is the shared Redis (or not a port at all). */
export function assertOwnPort(port: number): void {
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new RangeError(`redis-harness: ${port} is not a port`);
  }
  if (port === SHARED_REDIS_PORT) {
    throw new Error('redis-harness: refusing to touch the shared Redis on port 6379');
  }
}

/**
 * Send one command to a server on loopback over a fresh connection and read one reply.
 * Rejects when the connection fails or no full reply arrives within `timeoutMs` (a paused
 * server never answers).
 */
export async function rawCommand(
  port: number,
  args: readonly (string | number)[],
  timeoutMs = 5_000,
): Promise<Reply> {
  return (await rawCommands(port, [args], timeoutMs))[0]!;
}

/**
 * Send `commands` pipelined (written at once) over a fresh connection and read their replies,
 * in order; error replies are among them, not thrown. Rejects as {@link rawCommand} does.
 */
export function rawCommands(
  port: number,
  commands: readonly (readonly (string | number)[])[],
  timeoutMs = 5_000,
): Promise<Reply[]> {
  return new Promise((resolve, reject) => {
    assertOwnPort(port);
    const socket = connect({ host: '127.0.0.1', port });
    const replies: Reply[] = [];
    let buffer = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `redis-harness: ${commands[0]?.[0]} on port ${port} timed out after ${timeoutMs} ms`,
        ),
      );
    }, timeoutMs);
    socket.on('connect', () => socket.write(Buffer.concat(commands.map(encode))));
    socket.on('data', (chunk) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      let at = 0;
      for (let parsed = parse(buffer, at); parsed !== undefined; parsed = parse(buffer, at)) {
        replies.push(parsed.value);
        at = parsed.end;
        if (replies.length === commands.length) break;
      }
      buffer = buffer.subarray(at);
      if (replies.length < commands.length) return;
      clearTimeout(timer);
      socket.end();
      resolve(replies);
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`redis-harness: port ${port} closed the connection before replying`));
    });
  });
}

function encode(args: readonly (string | number)[]): Buffer {
  const parts = [`*${args.length}\r\n`];
  for (const arg of args) {
    const text = String(arg);
    parts.push(`$${Buffer.byteLength(text)}\r\n${text}\r\n`);
  }
  return Buffer.from(parts.join(''));
}

function parse(buffer: Buffer, offset: number): { value: Reply; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd === -1) return undefined;
  const type = String.fromCharCode(buffer[offset]!);
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new ReplyError(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`redis-harness: unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/** Parse `INFO` / `CLUSTER INFO` text into a record of its `field:value` lines. */
export function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

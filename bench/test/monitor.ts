import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { RedisServer } from '@hookgate/redis-harness';

/** One command as `MONITOR` shows it: its name (upper case), its arguments, who sent it. */
export interface Seen {
  command: string;
  args: string[];
  /** `lua` for a command a script ran, else the client's address. */
  from: string;
}

/** `+1700000000.123456 [0 127.0.0.1:51234] "SET" "k" "v"` → a {@link Seen}. */
function parseLine(line: string): Seen | undefined {
  const match = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
  if (match === null) return undefined;
  const words = [...match[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
  const [command = '', ...args] = words;
  return { command: command.toUpperCase(), args, from: match[1]! };
}

/**
 * A `MONITOR` connection to a harness server: every command the server runs, in order,
 * including those a Lua script runs (`from: 'lua'`).
 */
export class Monitor {
  readonly #socket: Socket;
  readonly #seen: Seen[] = [];
  #buffer = '';
  #waiters: (() => void)[] = [];

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      const lines = this.#buffer.split('\r\n');
      this.#buffer = lines.pop()!;
      for (const line of lines) {
        const seen = parseLine(line);
        if (seen !== undefined) this.#seen.push(seen);
      }
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  static async start(server: RedisServer): Promise<Monitor> {
    const socket = connect({ host: '127.0.0.1', port: server.port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve).once('error', reject);
    });
    const monitor = new Monitor(socket);
    socket.write('MONITOR\r\n');
    // MONITOR answers +OK; a marker then shows the stream is live.
    await monitor.#mark(server);
    return monitor;
  }

  /**
   * What the server ran between the previous call and now, the commands clients sent (not
   * those scripts ran) whose first key starts with `prefix`. A marker command sent after the
   * work makes sure everything before it has arrived.
   */
  async sent(server: RedisServer, prefix: string): Promise<Seen[]> {
    await this.#mark(server);
    const seen = this.#seen.splice(0);
    return seen.filter((s) => s.from !== 'lua' && keyOf(s)?.startsWith(prefix));
  }

  async #mark(server: RedisServer): Promise<void> {
    const marker = `monitor-mark-${randomUUID()}`;
    await server.command('ECHO', marker);
    for (;;) {
      const at = this.#seen.findIndex((s) => s.command === 'ECHO' && s.args[0] === marker);
      if (at >= 0) {
        this.#seen.splice(at, 1);
        return;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}

/** The key a command names: the first argument, or the key after `numkeys` for scripts. */
function keyOf(seen: Seen): string | undefined {
  if (seen.command === 'EVALSHA' || seen.command === 'EVAL') return seen.args[2];
  return seen.args[0];
}

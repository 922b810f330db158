/**
 * The example as a user runs it: the @hookgate packages built (Next.js resolves their `dist`,
 * as it would from npm), `next build`, then `next start` on a free loopback port as a child
 * process, driven with real HTTP and signed deliveries. The server is stopped by its pid.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runs } from '../lib/runs.js';

const DIR = fileURLToPath(new URL('..', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const NEXT = fileURLToPath(new URL('../node_modules/next/dist/bin/next', import.meta.url));
const SECRET = `whsec_${randomUUID()}`;
const ENV = { ...process.env, NEXT_TELEMETRY_DISABLED: '1', STRIPE_WEBHOOK_SECRET: SECRET };

let server: ChildProcess | undefined;
let output = '';
let base = '';

describe('examples/nextjs: a Next.js route handler guarded by @hookgate/fetch', () => {
  beforeAll(async () => {
    let started = performance.now();
    // The packages the example depends on, as npm would ship them (dist/).
    await run('pnpm', ['--filter', '@hookgate/example-nextjs^...', 'run', 'build'], ROOT);
    const packages = performance.now() - started;
    started = performance.now();
    await run(process.execPath, [NEXT, 'build'], DIR);
    const build = performance.now() - started;
    started = performance.now();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: DIR,
      env: ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    server.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    await ready();
    console.log(
      `packages built in ${seconds(packages)}, next build in ${seconds(build)}, ` +
        `next start ready in ${seconds(performance.now() - started)}`,
    );
  });

  afterAll(async () => {
    await stop(server);
  });

  it('duplicates of one event run the handler once, sequential or concurrent', async () => {
    const event = stripeEvent('evt_duplicate');
    const first = await deliver(event);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ received: true, key: 'evt:evt_duplicate' });
    for (let i = 0; i < 3; i++) {
      const again = await deliver(event);
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ status: 'duplicate' });
    }

    const burst = stripeEvent('evt_burst');
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const res = await deliver(burst);
        return { status: res.status, body: (await res.json()) as { status?: string } };
      }),
    );
    // One runs; the others find it in flight (409, the provider comes back) or done (200).
    expect(answers.filter((a) => a.status === 200 && a.body.status === undefined)).toHaveLength(1);
    for (const answer of answers.filter((a) => a.body.status !== undefined)) {
      expect([
        { status: 409, body: { status: 'in-flight' } },
        { status: 200, body: { status: 'duplicate' } },
      ]).toContainEqual(answer);
    }
    expect(await (await deliver(burst)).json()).toEqual({ status: 'duplicate' });

    const { runs, attempts } = await runsNow();
    expect(runs['evt:evt_duplicate']).toBe(1);
    expect(attempts['evt:evt_duplicate']).toBe(1);
    expect(runs['evt:evt_burst']).toBe(1);
    expect(attempts['evt:evt_burst']).toBe(1);
  });

  it('a handler that throws answers 500 and releases the event; the retry runs and succeeds', async () => {
    const event = stripeEvent('evt_flaky', 'test.fail_first_attempt');
    const failed = await deliver(event);
    expect(failed.status).toBe(500);
    await failed.body?.cancel();
    // Next.js logged the error the handler threw on.
    expect(output).toContain('simulated failure of evt:evt_flaky, attempt 1');

    const retry = await deliver(event);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual({ received: true, key: 'evt:evt_flaky' });
    expect(await (await deliver(event)).json()).toEqual({ status: 'duplicate' });

    const { runs, attempts } = await runsNow();
    expect(attempts['evt:evt_flaky']).toBe(2);
    expect(runs['evt:evt_flaky']).toBe(1);
  });

  it('a bad signature answers 401 and claims nothing', async () => {
    const event = stripeEvent('evt_forged');
    const body = JSON.stringify(event);
    const forged = await post(body, signature(body, 'whsec_not_the_secret'));
    expect(forged.status).toBe(401);
    expect(await forged.json()).toEqual({ status: 'unauthorized' });
    // Signed for another body (the amount was changed on the way).
    const tampered = JSON.stringify({ ...event, data: { object: { id: 'in_other' } } });
    expect((await post(tampered, signature(body))).status).toBe(401);
    // Signed too long ago (Stripe's 300 s tolerance).
    expect((await post(body, signature(body, SECRET, Date.now() / 1000 - 600))).status).toBe(401);
    expect((await post(body, undefined)).status).toBe(401);
    expect((await runsNow()).attempts['evt:evt_forged']).toBeUndefined();

    // Nothing was claimed: the genuine delivery runs.
    const genuine = await deliver(event);
    expect(await genuine.json()).toEqual({ received: true, key: 'evt:evt_forged' });
  });
});

function stripeEvent(id: string, type = 'invoice.paid') {
  return { id, type, created: Math.floor(Date.now() / 1000), data: { object: { id: 'in_1' } } };
}

/** `t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as Stripe signs. */
function signature(body: string, secret = SECRET, at = Date.now() / 1000): string {
  const t = Math.floor(at);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

function post(body: string, stripeSignature: string | undefined): Promise<Response> {
  return fetch(`${base}/api/webhooks/stripe`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      ...(stripeSignature === undefined ? {} : { 'stripe-signature': stripeSignature }),
    },
    signal: AbortSignal.timeout(10_000),
  });
}

function deliver(event: object): Promise<Response> {
  const body = JSON.stringify(event);
  return post(body, signature(body));
}

async function runsNow(): Promise<Runs> {
  const res = await fetch(`${base}/api/runs`, { signal: AbortSignal.timeout(10_000) });
  return (await res.json()) as Runs;
}

/** Run a command to its end; its output is shown only when it fails. */
function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: ENV, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error === null) resolve();
      else reject(new Error(`${command} ${args.join(' ')} failed\n${stdout}\n${stderr}`));
    });
  });
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Until GET /api/runs answers (at most 60 s), or the server exits. */
async function ready(): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (server!.exitCode !== null || server!.signalCode !== null) {
      throw new Error(`next start exited (${server!.exitCode ?? server!.signalCode})\n${output}`);
    }
    try {
      const res = await fetch(`${base}/api/runs`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`next start not ready within 60 s\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** SIGTERM by pid, SIGKILL if it is still there after 5 s. */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
  }, 5_000);
  await exited;
  clearTimeout(timer);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

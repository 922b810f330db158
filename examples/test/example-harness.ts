import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

/** A Standard Webhooks sender: signs `${id}.${timestamp}.${body}` with a `whsec_` secret. */
export function sender(secret: string) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return (
    body: string,
    id: string,
    options: { at?: number; signatures?: (valid: string) => string } = {},
  ) => {
    const timestamp = String(options.at ?? Math.floor(Date.now() / 1000));
    const valid = `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    return {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': options.signatures?.(valid) ?? valid,
      },
    };
  };
}

/** Start an example as a child process on an ephemeral port; resolves with its base URL. */
function startExample(script: string, env: Record<string, string>) {
  const child = spawn(tsx, ['--conditions=@hookgate/source', script], {
    cwd: root,
    env: { ...process.env, ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script} did not start:\n${output}`)),
      20_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The behaviour every framework example shows, through a real child process. */
export function describeExample(name: string, script: string): void {
  describe(name, () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const sign = sender(secret);
    let base = '';
    let running: ReturnType<typeof startExample>;
    const post = (init: ReturnType<typeof sign>) => fetch(`${base}/webhooks`, init);
    const applied = async () => (await (await fetch(`${base}/applied`)).json()) as string[];

    beforeAll(async () => {
      running = startExample(script, { WEBHOOK_SECRET: secret });
      base = await running.url;
    });
    afterAll(() => stop(running.child));

    it('processes a signed delivery once; a redelivery, even re-signed later, is a duplicate', async () => {
      const body = JSON.stringify({ type: 'invoice.paid', timestamp: '2024-05-01T10:00:00Z' });
      const first = await post(sign(body, 'msg_1'));
      expect(first.status).toBe(200);
      expect(await first.json()).toEqual({ status: 'processed' });
      const again = await post(sign(body, 'msg_1', { at: Math.floor(Date.now() / 1000) - 60 }));
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ status: 'duplicate' });
      expect(await applied()).toEqual(['evt:msg_1 invoice.paid']);
      expect(running.output()).toContain('decision duplicate evt:msg_1');
    });

    it('refuses a bad signature, another secret, or a missing header with 401', async () => {
      const body = JSON.stringify({ type: 'invoice.paid' });
      const forged = sign(body, 'msg_2', { signatures: () => 'v1,Zm9yZ2VkIHNpZ25hdHVyZQ==' });
      expect((await post(forged)).status).toBe(401);
      const other = sender(`whsec_${randomBytes(24).toString('base64')}`)(body, 'msg_2');
      expect((await post(other)).status).toBe(401);
      const bare = sign(body, 'msg_2');
      const { 'webhook-signature': _, ...unsigned } = bare.headers;
      expect((await post({ ...bare, headers: unsigned as typeof bare.headers })).status).toBe(401);
      // A body changed after signing.
      const tampered = { ...sign(body, 'msg_2'), body: body.replace('paid', 'void') };
      expect((await post(tampered)).status).toBe(401);
      expect(await applied()).not.toContainEqual(expect.stringContaining('msg_2'));
    });

    it('refuses a validly signed delivery older than five minutes with 401', async () => {
      const body = JSON.stringify({ type: 'invoice.paid' });
      const old = sign(body, 'msg_3', { at: Math.floor(Date.now() / 1000) - 6 * 60 });
      expect((await post(old)).status).toBe(401);
    });

    it('accepts several space-separated signatures when one of them is valid', async () => {
      const body = JSON.stringify({ type: 'customer.updated' });
      const rotated = sign(body, 'msg_4', {
        signatures: (valid) => `v1,b2xkIHNlY3JldA== v2,aWdub3JlZA== ${valid}`,
      });
      const res = await post(rotated);
      expect(res.status).toBe(200);
      expect(await applied()).toContain('evt:msg_4 customer.updated');
    });

    it('answers 400 to a validly signed body that is not JSON', async () => {
      const res = await post(sign('{"type": "invoice.paid",', 'msg_5'));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'invalid', reason: 'not-json' });
    });
  });
}

import { createHmac } from 'node:crypto';
import { createGate, providers, verifiers } from '@hookgate/core';
import { MemoryStore } from '@hookgate/memory';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { hookgate } from '../src/index.js';

const secret = 'github-webhook-secret';
const body = JSON.stringify({ action: 'opened', number: 7 });
const signature = (secret: string, payload: string) =>
  `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;

function app() {
  const handled: unknown[] = [];
  const gate = createGate({ store: new MemoryStore(), provider: providers.github });
  const hono = new Hono();
  hono.post('/webhooks/github', hookgate({ gate, verify: verifiers.github(secret) }), (c) => {
    handled.push(c.get('webhook').payload);
    return c.json({ ok: true }, 200);
  });
  const post = (hubSignature: string, payload = body) =>
    hono.request('/webhooks/github', {
      method: 'POST',
      body: payload,
      headers: {
        'Content-Type': 'application/json',
        'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
        'X-Hub-Signature-256': hubSignature,
      },
    });
  return { handled, post };
}

describe('a built-in verifier as the verify of @hookgate/hono', () => {
  it('a delivery with a bad signature answers 401 and runs nothing', async () => {
    const { handled, post } = app();
    const wrongSecret = await post(signature('another-secret', body));
    expect(wrongSecret.status).toBe(401);
    expect(await wrongSecret.json()).toEqual({ status: 'unauthorized' });
    const tampered = await post(signature(secret, body), body.replace('7', '8'));
    expect(tampered.status).toBe(401);
    expect(handled).toEqual([]);
  });

  it('a correctly signed delivery is handled (200), and its redelivery acknowledged', async () => {
    const { handled, post } = app();
    const first = await post(signature(secret, body));
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ ok: true });
    const again = await post(signature(secret, body));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ status: 'duplicate' });
    expect(handled).toEqual([{ action: 'opened', number: 7 }]);
  });

  it('a rejected delivery claims nothing: the genuine one still runs afterwards', async () => {
    const { handled, post } = app();
    expect((await post(signature('forged', body))).status).toBe(401);
    expect((await post(signature(secret, body))).status).toBe(200);
    expect(handled).toHaveLength(1);
  });
});

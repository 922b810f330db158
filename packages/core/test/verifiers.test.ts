import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it, vi } from 'vitest';
import {
  ErrorCode,
  HookgateError,
  type Verifier,
  type VerifierOptions,
  type Verify,
  verifiers,
} from '../src/index.js';

// Every binding accepts a verifier: Express, Koa and Fastify pass a Buffer and Node's headers,
// Hono and fetch a Uint8Array and Headers. (Checked by `tsc`.)
const _forNodeBindings: Verify<Buffer, IncomingHttpHeaders> = verifiers.github('s');
const _forWebBindings: Verify<Uint8Array, Headers> = verifiers.github('s');
void _forNodeBindings;
void _forWebBindings;

const NOW_S = 1_767_225_600; // 2026-01-01T00:00:00Z
const now = () => NOW_S * 1000;
const body = JSON.stringify({ id: 'evt_1', type: 'invoice.paid', amount: 4200 });
const tampered = body.replace('4200', '4201');

const stripeSdk = new Stripe('sk_test_not_used');
const whsec = (text: string) => `whsec_${Buffer.from(text).toString('base64')}`;

/** How a provider signs a body, and how its header can be spoiled. */
interface Provider {
  name: keyof typeof verifiers;
  secrets: [string, string]; // two distinct secrets
  /** Headers of a delivery of `payload` signed with `secret` at `t` (unix seconds). */
  sign(payload: string, secret: string, t: number): Promise<Record<string, string>>;
  /** The headers with their signature made malformed. */
  malformed(headers: Record<string, string>): Record<string, string>;
  /** The headers with a bogus signature offered before the valid one, if the provider allows several. */
  several?(headers: Record<string, string>): Record<string, string>;
  /** The default tolerance in seconds, when the provider signs a timestamp. */
  tolerance?: number;
}

const bogusHex = 'ab'.repeat(32);
const bogusBase64 = Buffer.alloc(32, 7).toString('base64');

const hmac = (secret: string | Buffer, content: string, encoding: 'hex' | 'base64') =>
  createHmac('sha256', secret).update(content).digest(encoding);

const standardSign =
  (Sdk: typeof StandardWebhook | typeof SvixWebhook, prefix: string) =>
  async (payload: string, secret: string, t: number) => ({
    [`${prefix}-id`]: 'msg_2Kt1',
    [`${prefix}-timestamp`]: String(t),
    [`${prefix}-signature`]: new Sdk(secret).sign('msg_2Kt1', new Date(t * 1000), payload),
  });

const standardSpoil = (prefix: string) => ({
  malformed: (h: Record<string, string>) => ({ ...h, [`${prefix}-signature`]: 'v1;not-base64!' }),
  several: (h: Record<string, string>) => ({
    ...h,
    [`${prefix}-signature`]: `v1,${bogusBase64} v1a,${bogusBase64} ${h[`${prefix}-signature`]}`,
  }),
});

const providers: Provider[] = [
  {
    name: 'stripe',
    secrets: ['whsec_stripe_one', 'whsec_stripe_two'],
    tolerance: 300,
    sign: async (payload, secret, timestamp) => ({
      'Stripe-Signature': stripeSdk.webhooks.generateTestHeaderString({
        payload,
        secret,
        timestamp,
      }),
    }),
    malformed: () => ({ 'Stripe-Signature': 'v1=,t=' }),
    several: (h) => ({
      'Stripe-Signature': h['Stripe-Signature']!.replace(
        ',v1=',
        `,v0=${bogusHex},v1=${bogusHex},v1=`,
      ),
    }),
  },
  {
    name: 'github',
    secrets: ['github-one', 'github-two'],
    sign: async (payload, secret) => ({ 'X-Hub-Signature-256': await githubSign(secret, payload) }),
    malformed: (h) => ({
      'X-Hub-Signature-256': h['X-Hub-Signature-256']!.replace('sha256=', 'sha1='),
    }),
  },
  {
    name: 'shopify',
    secrets: ['shopify-one', 'shopify-two'],
    sign: async (payload, secret) => ({ 'X-Shopify-Hmac-Sha256': hmac(secret, payload, 'base64') }),
    malformed: () => ({ 'X-Shopify-Hmac-Sha256': '%%% not base64 %%%' }),
  },
  {
    name: 'standardWebhooks',
    secrets: [whsec('standard-webhooks-one'), whsec('standard-webhooks-two')],
    tolerance: 300,
    sign: standardSign(StandardWebhook, 'webhook'),
    ...standardSpoil('webhook'),
  },
  {
    name: 'svix',
    secrets: [whsec('svix-one'), whsec('svix-two')],
    tolerance: 300,
    sign: standardSign(SvixWebhook, 'svix'),
    ...standardSpoil('svix'),
  },
  {
    name: 'slack',
    secrets: ['slack-one', 'slack-two'],
    tolerance: 300,
    sign: async (payload, secret, t) => ({
      'X-Slack-Request-Timestamp': String(t),
      'X-Slack-Signature': `v0=${hmac(secret, `v0:${t}:${payload}`, 'hex')}`,
    }),
    malformed: (h) => ({ ...h, 'X-Slack-Signature': 'v0=not-hex' }),
  },
  {
    name: 'paddle',
    secrets: ['pdl_ntfset_01_one', 'pdl_ntfset_01_two'],
    tolerance: 5,
    sign: async (payload, secret, t) => ({
      'Paddle-Signature': `ts=${t};h1=${hmac(secret, `${t}:${payload}`, 'hex')}`,
    }),
    malformed: (h) => ({ 'Paddle-Signature': h['Paddle-Signature']!.replace('ts=', 'ts=x') }),
    several: (h) => ({
      'Paddle-Signature': h['Paddle-Signature']!.replace(';h1=', `;h1=${bogusHex};h1=`),
    }),
  },
];

function make(provider: Provider, secret: string | string[], options: VerifierOptions = {}) {
  const build = verifiers[provider.name] as (s: typeof secret, o?: VerifierOptions) => Verifier;
  return build(secret, { now, ...options });
}

describe.each(providers)('verifiers.$name', (provider) => {
  const [secret, other] = provider.secrets;

  it('accepts a delivery signed by the provider', async () => {
    const headers = await provider.sign(body, secret, NOW_S);
    await expect(make(provider, secret)(new TextEncoder().encode(body), headers)).resolves.toBe(
      true,
    );
  });

  it('accepts a Buffer body, a string body, Headers and lower-case Node headers', async () => {
    const headers = await provider.sign(body, secret, NOW_S);
    const verify = make(provider, secret);
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    await expect(verify(Buffer.from(body), lower)).resolves.toBe(true);
    await expect(verify(body, new Headers(headers))).resolves.toBe(true);
  });

  it('refuses a tampered body', async () => {
    const headers = await provider.sign(body, secret, NOW_S);
    await expect(make(provider, secret)(tampered, headers)).resolves.toBe(false);
  });

  it('refuses a delivery signed with another secret', async () => {
    const headers = await provider.sign(body, other, NOW_S);
    await expect(make(provider, secret)(body, headers)).resolves.toBe(false);
  });

  it('accepts a delivery signed with any secret of a rotation', async () => {
    const headers = await provider.sign(body, other, NOW_S);
    await expect(make(provider, [secret, other])(body, headers)).resolves.toBe(true);
    await expect(make(provider, [other, secret])(body, headers)).resolves.toBe(true);
  });

  it('refuses a delivery without its headers', async () => {
    await expect(make(provider, secret)(body, {})).resolves.toBe(false);
    await expect(make(provider, secret)(body, new Headers())).resolves.toBe(false);
  });

  it('refuses a malformed signature header', async () => {
    const headers = provider.malformed(await provider.sign(body, secret, NOW_S));
    await expect(make(provider, secret)(body, headers)).resolves.toBe(false);
  });

  it('resolves false, never rejects, whatever it is given', async () => {
    const verify = make(provider, secret) as (body: unknown, headers: unknown) => Promise<boolean>;
    await expect(verify(undefined, undefined)).resolves.toBe(false);
    await expect(verify(body, null)).resolves.toBe(false);
    await expect(
      verify(42, { [Object.keys(await provider.sign(body, secret, NOW_S))[0]!]: 7 }),
    ).resolves.toBe(false);
  });

  it('imports each secret as a key once, on first use', async () => {
    const headers = await provider.sign(body, other, NOW_S);
    const importKey = vi.spyOn(globalThis.crypto.subtle, 'importKey');
    try {
      const verify = make(provider, [secret, other]);
      expect(importKey).not.toHaveBeenCalled();
      for (let i = 0; i < 3; i++) await expect(verify(body, headers)).resolves.toBe(true);
      expect(importKey).toHaveBeenCalledTimes(2);
    } finally {
      importKey.mockRestore();
    }
  });

  if (provider.several !== undefined) {
    const several = provider.several;
    it('accepts several signatures of which one is valid', async () => {
      const headers = several(await provider.sign(body, secret, NOW_S));
      await expect(make(provider, secret)(body, headers)).resolves.toBe(true);
      const none = several(await provider.sign(body, other, NOW_S));
      await expect(make(provider, secret)(body, none)).resolves.toBe(false);
    });
  }

  const tolerance = provider.tolerance;
  if (tolerance !== undefined) {
    it(`allows a signed timestamp ${tolerance} s away by default, either way, and no more`, async () => {
      const verify = make(provider, secret);
      for (const t of [NOW_S - tolerance, NOW_S + tolerance]) {
        await expect(verify(body, await provider.sign(body, secret, t))).resolves.toBe(true);
      }
      for (const t of [NOW_S - tolerance - 1, NOW_S + tolerance + 1]) {
        await expect(verify(body, await provider.sign(body, secret, t))).resolves.toBe(false);
      }
    });

    it('takes its tolerance and clock from the options', async () => {
      const headers = await provider.sign(body, secret, NOW_S - 3600);
      await expect(make(provider, secret)(body, headers)).resolves.toBe(false);
      await expect(make(provider, secret, { tolerance: 3600 })(body, headers)).resolves.toBe(true);
      await expect(make(provider, secret, { tolerance: Infinity })(body, headers)).resolves.toBe(
        true,
      );
      const earlier = { now: () => (NOW_S - 3600) * 1000 };
      await expect(make(provider, secret, earlier)(body, headers)).resolves.toBe(true);
    });
  }
});

describe('verifiers: documented test vectors', () => {
  it('slack: the example request of "Verifying requests from Slack"', async () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack
    const slackBody =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const headers = {
      'X-Slack-Request-Timestamp': '1531420618',
      'X-Slack-Signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    const verify = verifiers.slack('8f742231b10e8888abcd99yyyzzz85a5', {
      now: () => 1531420618 * 1000,
    });
    await expect(verify(slackBody, headers)).resolves.toBe(true);
    await expect(verify(`${slackBody}x`, headers)).resolves.toBe(false);
  });
});

describe('verifiers: what each reads', () => {
  it('svix reads the svix- headers first, and the webhook- ones as well', async () => {
    const secret = whsec('svix-one');
    const signature = new SvixWebhook(secret).sign('msg_1', new Date(NOW_S * 1000), body);
    const verify = verifiers.svix(secret, { now });
    const webhook = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': `${NOW_S}`,
      'webhook-signature': signature,
    };
    await expect(verify(body, webhook)).resolves.toBe(true);
    await expect(verify(body, { ...webhook, 'svix-id': 'msg_other' })).resolves.toBe(false);
    // standardWebhooks knows only the webhook- names.
    const svixOnly = {
      'svix-id': 'msg_1',
      'svix-timestamp': `${NOW_S}`,
      'svix-signature': signature,
    };
    await expect(verifiers.standardWebhooks(secret, { now })(body, svixOnly)).resolves.toBe(false);
  });

  it('standardWebhooks takes the secret with or without its whsec_ prefix', async () => {
    const secret = whsec('standard-webhooks-one');
    const headers = await standardSign(StandardWebhook, 'webhook')(body, secret, NOW_S);
    const bare = secret.slice('whsec_'.length);
    await expect(verifiers.standardWebhooks(bare, { now })(body, headers)).resolves.toBe(true);
  });

  it('a secret that cannot be a key fails every delivery, and the next secret still works', async () => {
    const secret = whsec('standard-webhooks-one');
    const headers = await standardSign(StandardWebhook, 'webhook')(body, secret, NOW_S);
    await expect(verifiers.standardWebhooks('whsec_***', { now })(body, headers)).resolves.toBe(
      false,
    );
    await expect(verifiers.standardWebhooks('whsec_', { now })(body, headers)).resolves.toBe(false);
    const rotation = verifiers.standardWebhooks(['whsec_***', secret], { now });
    await expect(rotation(body, headers)).resolves.toBe(true);
  });

  it('stripe refuses a header with two timestamps', async () => {
    const header = stripeSdk.webhooks.generateTestHeaderString({
      payload: body,
      secret: 'whsec_stripe_one',
      timestamp: NOW_S,
    });
    const verify = verifiers.stripe('whsec_stripe_one', { now });
    await expect(verify(body, { 'stripe-signature': header })).resolves.toBe(true);
    await expect(verify(body, { 'stripe-signature': `t=${NOW_S},${header}` })).resolves.toBe(false);
  });

  it('stripe counts v1 signatures only', async () => {
    const header = stripeSdk.webhooks.generateTestHeaderString({
      payload: body,
      secret: 'whsec_stripe_one',
      timestamp: NOW_S,
      scheme: 'v0',
    });
    const verify = verifiers.stripe('whsec_stripe_one', { now });
    await expect(verify(body, { 'stripe-signature': header })).resolves.toBe(false);
    const v1 = header.replace(',v0=', ',v1=');
    await expect(verify(body, { 'stripe-signature': v1 })).resolves.toBe(true);
  });

  it('github reads the SHA-256 header only, not the legacy SHA-1 one', async () => {
    const secret = 'github-one';
    const sha1 = `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;
    await expect(verifiers.github(secret)(body, { 'X-Hub-Signature': sha1 })).resolves.toBe(false);
  });

  it('a signature of another length never matches', async () => {
    const secret = 'github-one';
    const valid = await githubSign(secret, body);
    const verify = verifiers.github(secret);
    await expect(verify(body, { 'x-hub-signature-256': valid.slice(0, -2) })).resolves.toBe(false);
    await expect(verify(body, { 'x-hub-signature-256': `${valid}00` })).resolves.toBe(false);
    await expect(verify(body, { 'x-hub-signature-256': 'sha256=' })).resolves.toBe(false);
  });
});

describe('verifiers: options', () => {
  const invalid = (build: () => unknown, text: RegExp) => {
    let error: unknown;
    try {
      build();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe(ErrorCode.INVALID_OPTIONS);
    expect((error as Error).message).toMatch(text);
  };

  it('refuses an empty or mistyped secret when the verifier is built', () => {
    invalid(() => verifiers.stripe(''), /^verifiers\.stripe: option `secret` must be/);
    invalid(() => verifiers.github([]), /^verifiers\.github: option `secret`/);
    invalid(() => verifiers.shopify(['one', '']), /option `secret`/);
    invalid(() => verifiers.slack(42 as unknown as string), /option `secret`/);
    invalid(() => verifiers.paddle(undefined as unknown as string), /option `secret`/);
  });

  it('refuses a wrong tolerance or clock when the verifier is built', () => {
    invalid(() => verifiers.svix(whsec('x'), { tolerance: -1 }), /option `tolerance`/);
    invalid(() => verifiers.stripe('s', { tolerance: Number.NaN }), /option `tolerance`/);
    invalid(() => verifiers.slack('s', { tolerance: '300' as unknown as number }), /tolerance/);
    invalid(() => verifiers.paddle('s', { now: 0 as unknown as () => number }), /option `now`/);
  });

  it('builds without options and checks against the real clock', async () => {
    const secret = 'pdl_ntfset_01_one';
    const t = Math.floor(Date.now() / 1000);
    const headers = { 'Paddle-Signature': `ts=${t};h1=${hmac(secret, `${t}:${body}`, 'hex')}` };
    await expect(verifiers.paddle(secret)(body, headers)).resolves.toBe(true);
    const old = t - 60;
    const stale = { 'Paddle-Signature': `ts=${old};h1=${hmac(secret, `${old}:${body}`, 'hex')}` };
    await expect(verifiers.paddle(secret)(body, stale)).resolves.toBe(false);
  });
});

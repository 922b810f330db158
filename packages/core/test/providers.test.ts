import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  createGate,
  type Delivery,
  definePreset,
  deriveKey,
  HookgateError,
  InvalidDeliveryError,
  type Preset,
  providers,
  type WebhookEvent,
} from '../src/index.js';

const HOUR = 3_600_000;

/**
 * One realistic delivery per provider, shaped like the provider's documented payload and
 * headers: the first attempt, a redelivery of the same event (a later attempt, so its
 * per-attempt headers differ), and a new event about the same subject.
 */
interface Sample {
  preset: Preset;
  /** The provider's documented retry horizon, in hours: the record must outlive it. */
  horizonHours: number;
  first: Delivery;
  redelivery: Delivery;
  next: Delivery;
  key: string;
  subject: string | undefined;
  occurredAt: number | undefined;
}

const stripeEvent = (id: string, created: number, status: string) => ({
  id,
  object: 'event',
  api_version: '2024-06-20',
  created,
  data: {
    object: {
      id: 'pi_3NG8Dt2eZvKYlo2C0mF0pQZm',
      object: 'payment_intent',
      amount: 2000,
      currency: 'usd',
      status,
    },
  },
  livemode: true,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type: `payment_intent.${status}`,
});

const githubIssue = (action: string) => ({
  action,
  issue: { id: 1, number: 1347, title: 'Found a bug', state: 'open' },
  repository: { id: 1296269, full_name: 'octocat/Hello-World' },
  sender: { login: 'octocat', id: 1 },
});
const githubHeaders = (delivery: string, event = 'issues') => ({
  'x-github-event': event,
  'x-github-delivery': delivery,
  'x-github-hook-id': '292430182',
  'x-hub-signature-256': `sha256=${'d5'.repeat(32)}`,
  'user-agent': 'GitHub-Hookshot/044aadd',
});

const shopifyProduct = (updatedAt: string, title: string) => ({
  id: 9554194432293,
  admin_graphql_api_id: 'gid://shopify/Product/9554194432293',
  title,
  status: 'active',
  vendor: 'My Store',
  updated_at: updatedAt,
});
const shopifyHeaders = (webhookId: string, triggeredAt: string, eventId = webhookId) => ({
  'X-Shopify-Topic': 'products/update',
  'X-Shopify-Hmac-Sha256': 'XWmrwMey6OsLMeiZKwP4FppHH3cmAiiJJAweH5Jo4bM=',
  'X-Shopify-Shop-Domain': 'cool-store.myshopify.com',
  'X-Shopify-API-Version': '2025-04',
  'X-Shopify-Webhook-Id': webhookId,
  'X-Shopify-Event-Id': eventId,
  'X-Shopify-Triggered-At': triggeredAt,
});

const paddleEvent = (eventId: string, notificationId: string, occurredAt: string) => ({
  event_id: eventId,
  event_type: 'subscription.updated',
  occurred_at: occurredAt,
  notification_id: notificationId,
  data: {
    id: 'sub_01hv8x29kz0t586xy6zn1a62ny',
    status: 'active',
    customer_id: 'ctm_01hv6y1jedq4p1n0yqn5ba3ky4',
  },
});

const slackEvent = (eventId: string, eventTime: number, reaction: string) => ({
  token: 'XXYYZZ',
  team_id: 'T123ABC456',
  api_app_id: 'A123ABC456',
  event: {
    type: 'reaction_added',
    user: 'U123ABC456',
    reaction,
    item: { type: 'message', channel: 'C123ABC456', ts: '1360782400.498405' },
    event_ts: `${eventTime}.083113`,
  },
  type: 'event_callback',
  event_id: eventId,
  event_time: eventTime,
});
const slackHeaders = (requestTs: number, retry?: number) => ({
  'X-Slack-Request-Timestamp': String(requestTs),
  'X-Slack-Signature': `v0=${'a2'.repeat(32)}`,
  ...(retry === undefined
    ? {}
    : { 'X-Slack-Retry-Num': String(retry), 'X-Slack-Retry-Reason': 'http_timeout' }),
});

const contact = (type: string, timestamp: string) => ({
  type,
  timestamp,
  data: { id: '1f81eb52-5198-4599-803e-771906343485', fullName: 'John Smith' },
});

// SendGrid's documented Event Webhook shape: a batch is a JSON array of these.
const sendgridEvent = (sgEventId: string, event: string, timestamp: number) => ({
  email: 'example@test.com',
  timestamp,
  'smtp-id': '<14c5d75ce93.dfd.64b469@ismtpd-555>',
  event,
  category: 'cat facts',
  sg_event_id: sgEventId,
  sg_message_id: '14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0',
});

const grant = (id: string | undefined, occurredAt: string, status: string) => ({
  ...(id === undefined ? {} : { id }),
  grant_id: 'grant_8841',
  occurred_at: occurredAt,
  status,
});

const samples: Record<keyof typeof providers, Sample> = {
  stripe: {
    preset: providers.stripe,
    horizonHours: 72,
    first: {
      payload: stripeEvent('evt_1NG8Du2eZvKYlo2CUI79vXWy', 1686089970, 'succeeded'),
      headers: { 'stripe-signature': `t=1686089971,v1=${'5a'.repeat(32)}` },
    },
    redelivery: {
      payload: stripeEvent('evt_1NG8Du2eZvKYlo2CUI79vXWy', 1686089970, 'succeeded'),
      // A retry is signed anew: the signature's `t=` is the attempt's time, not the event's.
      headers: { 'stripe-signature': `t=1686093571,v1=${'7c'.repeat(32)}` },
    },
    next: {
      payload: stripeEvent('evt_1NG8Eb2eZvKYlo2C9cJx2Wq1', 1686090012, 'canceled'),
      headers: { 'stripe-signature': `t=1686090013,v1=${'9e'.repeat(32)}` },
    },
    key: 'evt:evt_1NG8Du2eZvKYlo2CUI79vXWy',
    subject: 'pi_3NG8Dt2eZvKYlo2C0mF0pQZm',
    occurredAt: 1686089970_000,
  },
  github: {
    preset: providers.github,
    horizonHours: 72,
    first: {
      payload: githubIssue('opened'),
      headers: githubHeaders('72d3162e-cc78-11e3-81ab-4c9367dc0958'),
    },
    redelivery: {
      payload: githubIssue('opened'),
      headers: githubHeaders('72d3162e-cc78-11e3-81ab-4c9367dc0958'),
    },
    next: {
      payload: githubIssue('edited'),
      headers: githubHeaders('a1b2c3d4-cc78-11e3-81ab-4c9367dc0958'),
    },
    key: 'evt:72d3162e-cc78-11e3-81ab-4c9367dc0958',
    subject: undefined,
    occurredAt: undefined,
  },
  shopify: {
    preset: providers.shopify,
    horizonHours: 4,
    first: {
      payload: shopifyProduct('2025-04-22T14:30:00-05:00', 'T-Shirt'),
      headers: shopifyHeaders(
        'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
        '2025-04-22T19:30:00.481Z',
        '7b8c9d0a-1234-5678-90ab-cdef12345678',
      ),
    },
    redelivery: {
      payload: shopifyProduct('2025-04-22T14:30:00-05:00', 'T-Shirt'),
      headers: shopifyHeaders(
        'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
        '2025-04-22T19:30:00.481Z',
        '7b8c9d0a-1234-5678-90ab-cdef12345678',
      ),
    },
    next: {
      payload: shopifyProduct('2025-04-22T14:42:10-05:00', 'T-Shirt (organic)'),
      headers: shopifyHeaders('0e4f7c1a-5d7b-4a3e-9b55-2f1c7d9b6e20', '2025-04-22T19:42:10.118Z'),
    },
    key: 'evt:b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    subject: 'gid://shopify/Product/9554194432293',
    occurredAt: Date.UTC(2025, 3, 22, 19, 30, 0),
  },
  paddle: {
    preset: providers.paddle,
    horizonHours: 72,
    first: {
      payload: paddleEvent(
        'evt_01hv8x2acma0yy4wpm0ydmbxbm',
        'ntf_01hv8x2af5p0hbt3a6k8pn8dmb',
        '2024-04-12T10:18:49.621022Z',
      ),
      headers: { 'paddle-signature': `ts=1712917130;h1=${'3f'.repeat(32)}` },
    },
    redelivery: {
      payload: paddleEvent(
        'evt_01hv8x2acma0yy4wpm0ydmbxbm',
        'ntf_01hv8x2af5p0hbt3a6k8pn8dmb',
        '2024-04-12T10:18:49.621022Z',
      ),
      headers: { 'paddle-signature': `ts=1712917790;h1=${'4b'.repeat(32)}` },
    },
    next: {
      payload: paddleEvent(
        'evt_01hv8y0k3n2ph7y0d5t8f2t9m1',
        'ntf_01hv8y0k5s0tq8x1h2c3v4b5n6',
        '2024-04-12T10:35:02.004518Z',
      ),
      headers: { 'paddle-signature': `ts=1712918103;h1=${'8d'.repeat(32)}` },
    },
    key: 'evt:evt_01hv8x2acma0yy4wpm0ydmbxbm',
    subject: 'sub_01hv8x29kz0t586xy6zn1a62ny',
    occurredAt: Date.UTC(2024, 3, 12, 10, 18, 49, 621),
  },
  slack: {
    preset: providers.slack,
    horizonHours: 0.1,
    first: {
      payload: slackEvent('Ev0PV52K21', 1360782804, 'thumbsup'),
      headers: slackHeaders(1360782805),
    },
    redelivery: {
      payload: slackEvent('Ev0PV52K21', 1360782804, 'thumbsup'),
      headers: slackHeaders(1360782868, 1),
    },
    next: {
      payload: slackEvent('Ev0PV52K99', 1360782811, 'eyes'),
      headers: slackHeaders(1360782812),
    },
    key: 'evt:Ev0PV52K21',
    subject: undefined,
    occurredAt: 1360782804_000,
  },
  sendgrid: {
    // One event of a batch, as gate.split(body) hands it on; retried batches for 24 hours.
    preset: providers.sendgrid,
    horizonHours: 24,
    first: { payload: sendgridEvent('2FeCcG5VRWpck6mKqRgnDg==', 'processed', 1519267261) },
    redelivery: { payload: sendgridEvent('2FeCcG5VRWpck6mKqRgnDg==', 'processed', 1519267261) },
    next: { payload: sendgridEvent('hqFbp3HH9WxIM0R2-x2M1Q==', 'delivered', 1519267263) },
    key: 'evt:2FeCcG5VRWpck6mKqRgnDg==',
    subject: undefined,
    occurredAt: 1519267261_000,
  },
  standardWebhooks: {
    preset: providers.standardWebhooks,
    horizonHours: 75.6,
    first: {
      payload: contact('contact.created', '2022-11-03T20:26:10.344522Z'),
      headers: {
        'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
        'webhook-timestamp': '1667507171',
        'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
      },
    },
    redelivery: {
      payload: contact('contact.created', '2022-11-03T20:26:10.344522Z'),
      headers: {
        'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
        'webhook-timestamp': '1667509271',
        'webhook-signature': 'v1,f4aQ1pAEV0pkGCNA7bOFaW5Aw+KVV1oXKLm43fOCxMg=',
      },
    },
    next: {
      payload: contact('contact.updated', '2022-11-03T20:40:00Z'),
      headers: {
        'webhook-id': 'msg_2KWQ0c1uYQ8bX5T2n9hQJ3Kf7aZ',
        'webhook-timestamp': '1667508001',
        'webhook-signature': 'v1,9V0tq3Jb1hHk2x4uY0B6n2m8dQ4cL1pR7sT5wX3zA0E=',
      },
    },
    key: 'evt:msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
    subject: undefined,
    occurredAt: Date.UTC(2022, 10, 3, 20, 26, 10, 344),
  },
  svix: {
    preset: providers.svix,
    horizonHours: 27.6,
    first: {
      payload: contact('invoice.paid', '2024-02-01T08:00:00.000Z'),
      headers: {
        'svix-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'svix-timestamp': '1706774401',
        'svix-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
    },
    redelivery: {
      payload: contact('invoice.paid', '2024-02-01T08:00:00.000Z'),
      headers: {
        'svix-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'svix-timestamp': '1706776506',
        'svix-signature': 'v1,Jm6bQ1KQ6xsVh3Vv2yX0ZlHn8bFJd2o5uQyq7rZl0sI=',
      },
    },
    next: {
      payload: contact('invoice.refunded', '2024-02-01T09:15:00.000Z'),
      // A Svix-powered sender that sends the unbranded Standard Webhooks headers instead.
      headers: {
        'webhook-id': 'msg_p5jXQ0bRk2XfU1n7m3LpVc8t',
        'webhook-timestamp': '1706778901',
        'webhook-signature': 'v1,3bTn4Q0n1J6a2x8YpR0aV5cZ9sL7wE1kU4mH2gD6fB8=',
      },
    },
    key: 'evt:msg_p5jXN8AQM9LWM0D4loKWxJek',
    subject: undefined,
    occurredAt: Date.UTC(2024, 1, 1, 8, 0, 0),
  },
  sume: {
    preset: providers.sume,
    // 10 attempts, at most an hour apart.
    horizonHours: 9,
    first: {
      payload: {
        request_id: 'req_01J9ZK3V8Q2M4X7T6B5N1C0D9E',
        created_at: '2026-03-02T11:04:05.120Z',
        type: 'disbursement.completed',
        data: { disbursement_id: 'dsb_4471', amount: '1250.00', currency: 'EUR' },
      },
    },
    redelivery: {
      payload: {
        request_id: 'req_01J9ZK3V8Q2M4X7T6B5N1C0D9E',
        created_at: '2026-03-02T11:04:05.120Z',
        type: 'disbursement.completed',
        data: { disbursement_id: 'dsb_4471', amount: '1250.00', currency: 'EUR' },
      },
    },
    next: {
      payload: {
        request_id: 'req_01J9ZM0A1B2C3D4E5F6G7H8J9K',
        created_at: '2026-03-02T11:30:00Z',
        type: 'disbursement.reversed',
        data: { disbursement_id: 'dsb_4471', amount: '1250.00', currency: 'EUR' },
      },
    },
    key: 'evt:req_01J9ZK3V8Q2M4X7T6B5N1C0D9E',
    subject: undefined,
    occurredAt: Date.UTC(2026, 2, 2, 11, 4, 5, 120),
  },
  grantPortal: {
    preset: providers.grantPortal,
    horizonHours: 72,
    first: {
      payload: grant('evt_7731', '2026-05-01T10:00:00Z', 'approved'),
      headers: { 'x-event-id': 'evt_7731' },
    },
    redelivery: {
      payload: grant('evt_7731', '2026-05-01T10:00:00Z', 'approved'),
      headers: { 'x-event-id': 'evt_7731' },
    },
    next: {
      // An older portal release sends the id only in the header.
      payload: grant(undefined, '2026-05-02T09:30:00Z', 'disbursed'),
      headers: { 'X-Event-Id': 'evt_7790' },
    },
    key: 'evt:evt_7731',
    subject: 'grant_8841',
    occurredAt: Date.UTC(2026, 4, 1, 10, 0, 0),
  },
};

/** A gate over a MemoryStore whose clock the test moves by hand. */
function gateFor(provider: Preset) {
  let now = Date.UTC(2026, 0, 1);
  const store = new MemoryStore({ now: () => now });
  const gate = createGate({ store, provider });
  return { gate, advance: (ms: number) => (now += ms) };
}

describe.each(Object.entries(samples))('providers.%s', (name, sample) => {
  it('is the preset of that name', () => {
    expect(sample.preset).toBe(providers[name as keyof typeof providers]);
    expect(sample.preset.name).toBe(name);
  });

  it('derives the key from the documented event id', () => {
    expect(deriveKey(sample.first, { provider: sample.preset })).toEqual({
      key: sample.key,
      source: 'event-id',
    });
  });

  it('hands the handler the subject and the event time of the documented fields', async () => {
    const { gate } = gateFor(sample.preset);
    let seen: WebhookEvent | undefined;
    const outcome = await gate.run(sample.first, (event) => {
      seen = event;
    });
    expect(outcome).toMatchObject({ status: 'processed', key: sample.key });
    expect(seen?.subject).toBe(sample.subject);
    expect(seen?.occurredAt).toBe(sample.occurredAt);
  });

  it('acknowledges a redelivery of the same event as a duplicate', async () => {
    const { gate } = gateFor(sample.preset);
    let runs = 0;
    await gate.run(sample.first, () => runs++);
    expect(await gate.run(sample.redelivery, () => runs++)).toEqual({
      status: 'duplicate',
      key: sample.key,
    });
    expect(runs).toBe(1);
  });

  it('processes a new event about the same subject', async () => {
    const { gate } = gateFor(sample.preset);
    const keys: string[] = [];
    await gate.run(sample.first, (event) => keys.push(event.key));
    const outcome = await gate.run(sample.next, (event) => keys.push(event.key));
    expect(outcome.status).toBe('processed');
    expect(keys).toHaveLength(2);
    expect(keys[1]).not.toBe(keys[0]);
  });

  it("still recognises the provider's last retry", async () => {
    const { gate, advance } = gateFor(sample.preset);
    expect(sample.preset.doneTtlMs).toBeGreaterThan(sample.horizonHours * HOUR);
    await gate.run(sample.first, () => {});
    advance(Math.ceil(sample.horizonHours * HOUR));
    expect((await gate.run(sample.redelivery, () => {})).status).toBe('duplicate');
  });

  it('reads the event time from the payload, never from a per-attempt header', () => {
    // The redelivery's attempt headers differ from the first attempt's; its event time must not.
    expect(typeof (sample.preset.occurredAt ?? 'none')).toBe('string');
  });
});

describe('provider details', () => {
  it('sendgrid: a batch body splits into its events, each keyed by sg_event_id; a resent batch runs nothing twice', async () => {
    const { gate } = gateFor(providers.sendgrid);
    const batch = [
      sendgridEvent('2FeCcG5VRWpck6mKqRgnDg==', 'processed', 1519267261),
      sendgridEvent('qK1MxfAaE_ukyyNsjxTpkw==', 'deferred', 1519267261),
      sendgridEvent('hqFbp3HH9WxIM0R2-x2M1Q==', 'delivered', 1519267261),
    ];
    const body = {
      rawBody: JSON.stringify(batch),
      headers: { 'content-type': 'application/json' },
    };
    expect(gate.batched).toBe(true);
    const events = gate.split(body);
    expect(events.map((e) => deriveKey(e, { provider: providers.sendgrid }).key)).toEqual([
      'evt:2FeCcG5VRWpck6mKqRgnDg==',
      'evt:qK1MxfAaE_ukyyNsjxTpkw==',
      'evt:hqFbp3HH9WxIM0R2-x2M1Q==',
    ]);
    const runs: string[] = [];
    const first = await gate.runBatch(events, (e) => void runs.push(e.key));
    expect(first.map((r) => r.status)).toEqual(['processed', 'processed', 'processed']);
    // SendGrid may regroup a resent batch: one old event and a new one.
    const resent = gate.split({
      rawBody: JSON.stringify([
        batch[1],
        sendgridEvent('w5bEw7-Be-oM2A4WFmHw2A==', 'open', 1519267300),
      ]),
    });
    const second = await gate.runBatch(resent, (e) => void runs.push(e.key));
    expect(second.map((r) => r.status)).toEqual(['duplicate', 'processed']);
    expect(runs).toHaveLength(4);
    expect(new Set(runs).size).toBe(4);
  });

  it('sendgrid: a body that is not an array of events is invalid', () => {
    const { gate } = gateFor(providers.sendgrid);
    expect(() => gate.split({ rawBody: '{"sg_event_id":"x"}' })).toThrow(/did not give an array/);
    expect(() => gate.split({ rawBody: 'not json' })).toThrow(HookgateError);
  });

  it('a split that throws, or gives something other than an array, is not-json (docs/errors.md)', () => {
    const store = new MemoryStore();
    const reasons = [
      () => {
        throw new Error('no events here');
      },
      () => ({ events: [] }) as unknown as readonly unknown[],
    ].map((split) => {
      try {
        createGate({ store, eventId: 'id', split }).split({ payload: [{ id: 'a' }] });
        return 'split';
      } catch (error) {
        return error instanceof InvalidDeliveryError && error.reason;
      }
    });
    expect(reasons).toEqual(['not-json', 'not-json']);
  });

  it('shopify: webhooks of two topics that share one X-Shopify-Event-Id are both processed', async () => {
    const { gate } = gateFor(providers.shopify);
    const order = { id: 450789469, admin_graphql_api_id: 'gid://shopify/Order/450789469' };
    const headers = (topic: string, webhookId: string) => ({
      'X-Shopify-Topic': topic,
      'X-Shopify-Webhook-Id': webhookId,
      'X-Shopify-Event-Id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
    });
    const created = await gate.run(
      { payload: order, headers: headers('orders/create', 'a1f3c9d2-0000-4000-8000-000000000001') },
      () => 'create',
    );
    const paid = await gate.run(
      { payload: order, headers: headers('orders/paid', 'a1f3c9d2-0000-4000-8000-000000000002') },
      () => 'paid',
    );
    expect([created.status, paid.status]).toEqual(['processed', 'processed']);
  });

  it('grantPortal: a legacy delivery with neither id nor header is keyed by its digest', () => {
    const legacy = { rawBody: '{"grant_id":"grant_8841","occurred_at":"2026-05-01T10:00:00Z"}' };
    expect(deriveKey(legacy, { provider: providers.grantPortal }).source).toBe('digest');
  });

  it('stripe: same-second events about one object are dropped by default and applied with ties: "apply"', async () => {
    const at = 1686089970;
    const a = { payload: stripeEvent('evt_A', at, 'processing') };
    const b = { payload: stripeEvent('evt_B', at, 'succeeded') };
    const drop = createGate({
      store: new MemoryStore(),
      provider: providers.stripe,
      sequence: true,
    });
    await drop.run(a, () => {});
    expect((await drop.run(b, () => {})).status).toBe('stale');
    const apply = createGate({
      store: new MemoryStore(),
      provider: providers.stripe,
      sequence: { ties: 'apply' },
    });
    await apply.run(a, () => {});
    expect((await apply.run(b, () => {})).status).toBe('processed');
  });

  it('every built-in preset is frozen, its selectors too', () => {
    const frozenAllTheWay = (value: unknown): boolean =>
      typeof value !== 'object' ||
      value === null ||
      (Object.isFrozen(value) && Object.values(value).every(frozenAllTheWay));
    for (const preset of Object.values(providers)) expect(frozenAllTheWay(preset)).toBe(true);
    expect(Object.isFrozen(providers.svix.eventId)).toBe(true);
    expect(Object.isFrozen((providers.svix.eventId as readonly object[])[0])).toBe(true);
  });

  it("definePreset freezes a copy, and leaves the caller's own selectors as they were", () => {
    const eventId = ['id', { header: 'X-Acme-Id' }];
    const preset = definePreset({ name: 'acme', eventId });
    expect(Object.isFrozen(preset.eventId)).toBe(true);
    expect(Object.isFrozen(eventId)).toBe(false);
    eventId.push('other');
    expect(preset.eventId).toEqual(['id', { header: 'X-Acme-Id' }]);
  });
});

describe('definePreset', () => {
  it('refuses a field a preset does not have, as definePreset and as a plain provider object', () => {
    const withGateOption = { name: 'acme', eventId: 'id', claimTtlMs: 1_000 };
    expect(() => definePreset(withGateOption as never)).toThrow(
      /provider\.claimTtlMs.*is not a preset field/,
    );
    expect(() =>
      createGate({ store: new MemoryStore(), provider: withGateOption as never }),
    ).toThrow(/provider\.claimTtlMs/);
    // Spread into the gate's options, the same fields are gate options and apply.
    expect(() => createGate({ store: new MemoryStore(), ...withGateOption })).not.toThrow();
  });

  it('defines a custom preset the gate uses like a built-in one', async () => {
    const acme = definePreset({
      name: 'acme',
      eventId: { header: 'Acme-Event-Id' },
      occurredAt: 'created_at',
      subject: 'account.id',
      doneTtlMs: 48 * HOUR,
    });
    expect(Object.isFrozen(acme)).toBe(true);
    const { gate } = gateFor(acme);
    const delivery = {
      payload: { created_at: 1767225600, account: { id: 'acct_9' } },
      headers: { 'acme-event-id': 'ae_1' },
    };
    let seen: WebhookEvent | undefined;
    await gate.run(delivery, (event) => {
      seen = event;
    });
    expect(seen).toMatchObject({ key: 'evt:ae_1', subject: 'acct_9', occurredAt: 1767225600_000 });
    expect((await gate.run(delivery, () => {})).status).toBe('duplicate');
  });

  it('refuses a malformed preset when it is defined, naming the field', () => {
    const bad = (preset: unknown) => () => definePreset(preset as Preset);
    expect(bad({ name: ' ' })).toThrow(/provider\.name/);
    expect(bad({ name: 'x', doneTtlMs: 0 })).toThrow(/provider\.doneTtlMs/);
    expect(bad({ name: 'x', doneTtlMs: 1.5 })).toThrow(/provider\.doneTtlMs/);
    expect(bad({ name: 'x', eventId: 'data..id' })).toThrow(/provider\.eventId/);
    expect(bad({ name: 'x', eventId: [] })).toThrow(/provider\.eventId/);
    expect(bad({ name: 'x', eventId: ['id', { header: 'bad header' }] })).toThrow(
      /provider\.eventId\[1\]/,
    );
    expect(bad({ name: 'x', subject: 42 })).toThrow(/provider\.subject/);
    expect(bad({ name: 'x', occurredAt: { header: '' } })).toThrow(/provider\.occurredAt/);
    expect(bad({ name: 'x', digestFallback: 'no' })).toThrow(/provider\.digestFallback/);
    try {
      bad({ name: 'x', doneTtlMs: -1 })();
    } catch (error) {
      expect(error).toBeInstanceOf(HookgateError);
      expect((error as HookgateError).code).toBe('INVALID_OPTIONS');
    }
  });

  it('composes with a built-in preset by spreading it', () => {
    const connect = definePreset({
      ...providers.stripe,
      name: 'stripe-connect',
      subject: 'account',
    });
    expect(connect).toMatchObject({ eventId: 'id', occurredAt: 'created', subject: 'account' });
    expect(providers.stripe.subject).toBe('data.object.id');
  });
});

describe('presets and explicit options', () => {
  const payload = stripeEvent('evt_X', 1686089970, 'succeeded');

  it('an explicit option wins over the preset given as provider', async () => {
    const gate = createGate({
      store: new MemoryStore(),
      provider: providers.stripe,
      subject: 'type',
      eventId: { header: 'x-request-id' },
    });
    let seen: WebhookEvent | undefined;
    await gate.run({ payload, headers: { 'x-request-id': 'req_1' } }, (event) => {
      seen = event;
    });
    expect(seen).toMatchObject({ key: 'evt:req_1', subject: 'payment_intent.succeeded' });
  });

  it('an explicit doneTtlMs wins over the preset, whether given as provider or spread', async () => {
    for (const options of [
      { provider: providers.stripe, doneTtlMs: HOUR },
      { ...providers.stripe, doneTtlMs: HOUR },
    ]) {
      let now = 0;
      const store = new MemoryStore({ now: () => now });
      const gate = createGate({ store, ...options });
      await gate.run({ payload }, () => {});
      now += HOUR + 1;
      expect((await gate.run({ payload }, () => {})).status).toBe('processed');
    }
  });

  it('a spread preset reports its name in decision events', async () => {
    const names: (string | undefined)[] = [];
    const gate = createGate({
      store: new MemoryStore(),
      ...providers.paddle,
      onDecision: (d) => names.push(d.provider),
    });
    await gate.run({ payload: paddleEvent('evt_1', 'ntf_1', '2024-04-12T10:18:49Z') }, () => {});
    expect(names).toEqual(['paddle', 'paddle']);
  });
});

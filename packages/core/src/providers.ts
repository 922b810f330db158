import { invalidOption } from './errors.js';
import type { Selector } from './types.js';

const HOUR = 3_600_000;

/**
 * A provider preset: where a provider puts the event id, the event time and the subject, and
 * how long a done record must outlive the first delivery to catch the provider's last retry.
 * It is a plain object of gate options: pass it as `provider`, or spread it into the options.
 * Options given explicitly win over the preset's.
 */
export interface Preset {
  /** The provider's name, reported in decision events. */
  readonly name: string;
  /** Where the provider's event id lives; an array is tried in order. */
  readonly eventId?: Selector | readonly Selector[];
  /** Where the subject (the entity the event is about) lives. */
  readonly subject?: Selector;
  /** Where the provider's event time lives (never an attempt-time header). */
  readonly occurredAt?: Selector;
  /** How long a done record lives: longer than the provider's retry horizon. */
  readonly doneTtlMs?: number;
  /** Whether deliveries without an event id are keyed by a digest. */
  readonly digestFallback?: boolean;
}

/**
 * Define a provider preset, checked the way the built-in ones are. The result is frozen.
 *
 * @example
 * const acme = definePreset({ name: 'acme', eventId: { header: 'Acme-Event-Id' }, doneTtlMs: 48 * 3_600_000 });
 * const gate = createGate({ store, provider: acme });
 */
export function definePreset<const P extends Preset>(preset: P): Readonly<P> {
  if (typeof preset.name !== 'string' || preset.name.trim() === '') {
    invalidOption('provider.name', 'must be a non-empty string');
  }
  if (
    preset.doneTtlMs !== undefined &&
    !(Number.isSafeInteger(preset.doneTtlMs) && preset.doneTtlMs > 0)
  ) {
    invalidOption('provider.doneTtlMs', 'must be a positive integer of milliseconds');
  }
  return Object.freeze({ ...preset });
}

/**
 * Built-in presets. Each names its sources; none turns the sequence guard on (a policy only the
 * application can choose), and none reads a provider's per-attempt time as the event time.
 */
export const providers = {
  /**
   * Stripe: `id` (`evt_…`), `created` in unix seconds (whole seconds: same-second events are
   * common, see `ties`), subject `data.object.id`. Live mode retries for up to 3 days; the
   * done record lives 4. https://docs.stripe.com/webhooks#retries
   */
  stripe: definePreset({
    name: 'stripe',
    eventId: 'id',
    occurredAt: 'created',
    subject: 'data.object.id',
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * GitHub: the `X-GitHub-Delivery` GUID, which a redelivery keeps. GitHub does not retry on
   * its own; failed deliveries can be redelivered by hand for 3 days, so the record lives 4.
   * No uniform event time or subject across event types.
   * https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers
   */
  github: definePreset({
    name: 'github',
    eventId: { header: 'X-GitHub-Delivery' },
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * Shopify: `X-Shopify-Webhook-Id` (unique per webhook, kept across retries — not
   * `X-Shopify-Event-Id`, which several webhooks of one event share), the resource's
   * `updated_at` and `admin_graphql_api_id`. Shopify retries 8 times over 4 hours; the record
   * lives 48. https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates
   */
  shopify: definePreset({
    name: 'shopify',
    eventId: { header: 'X-Shopify-Webhook-Id' },
    occurredAt: 'updated_at',
    subject: 'admin_graphql_api_id',
    doneTtlMs: 48 * HOUR,
  }),
  /**
   * Paddle Billing: `event_id`, `occurred_at` (RFC 3339), subject `data.id`. Live mode retries
   * for about 3 days; the record lives 4.
   * https://developer.paddle.com/webhooks/respond-to-webhooks
   */
  paddle: definePreset({
    name: 'paddle',
    eventId: 'event_id',
    occurredAt: 'occurred_at',
    subject: 'data.id',
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * Slack Events API: `event_id`, `event_time` in unix seconds (whole seconds). Slack retries
   * three times within minutes; the record lives a day.
   * https://api.slack.com/apis/events-api#retries
   */
  slack: definePreset({
    name: 'slack',
    eventId: 'event_id',
    occurredAt: 'event_time',
    doneTtlMs: 24 * HOUR,
  }),
  /**
   * Standard Webhooks: the `webhook-id` header; the payload's `timestamp` is the event time
   * (the `webhook-timestamp` header is the attempt's, never used). The suggested schedule
   * retries for about 28 hours; the record lives 72.
   * https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
   */
  standardWebhooks: definePreset({
    name: 'standardWebhooks',
    eventId: { header: 'webhook-id' },
    occurredAt: 'timestamp',
    doneTtlMs: 72 * HOUR,
  }),
  /**
   * Svix: the `svix-id` header and the payload's `timestamp` (not `svix-timestamp`, the attempt
   * time). Svix retries for about 28 hours; the record lives 72.
   * https://docs.svix.com/retries
   */
  svix: definePreset({
    name: 'svix',
    eventId: { header: 'svix-id' },
    occurredAt: 'timestamp',
    doneTtlMs: 72 * HOUR,
  }),
  /**
   * Sume: the envelope's `request_id` and `created_at`. Sume makes 10 attempts with backoff of
   * up to an hour between them (under 10 hours in all); the record lives 24.
   */
  sume: definePreset({
    name: 'sume',
    eventId: 'request_id',
    occurredAt: 'created_at',
    doneTtlMs: 24 * HOUR,
  }),
  /**
   * A grant portal: `id`, else the `X-Event-Id` header; `occurred_at`; subject `grant_id`. The
   * portal retries for 72 hours; the record lives 96.
   */
  grantPortal: definePreset({
    name: 'grantPortal',
    eventId: ['id', { header: 'X-Event-Id' }],
    occurredAt: 'occurred_at',
    subject: 'grant_id',
    doneTtlMs: 96 * HOUR,
  }),
} as const;

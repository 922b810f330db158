import { invalidOption } from './errors.js';
import { compileSelector } from './select.js';
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
  /** Where the provider's event id lives (stable across redeliveries); an array is tried in order. */
  readonly eventId?: Selector | readonly Selector[];
  /** Where the subject (the entity the event is about: a payment, a grant, …) lives. */
  readonly subject?: Selector;
  /**
   * Where the provider's event time lives: ISO 8601 / RFC 3339, unix seconds or milliseconds.
   * Never a per-attempt header, which changes on every retry.
   */
  readonly occurredAt?: Selector;
  /** How long a done record lives, in milliseconds: longer than the provider's retry horizon. */
  readonly doneTtlMs?: number;
  /** Whether deliveries without an event id are keyed by a digest of their payload. */
  readonly digestFallback?: boolean;
  /**
   * Whether the gate checks the payload behind an event id (see `GateOptions.fingerprint`). For
   * a preset whose provider sends the same body on every retry of one event id.
   */
  readonly fingerprint?: boolean;
  /**
   * For a provider that posts many events in one body: the events of a body's parsed payload
   * (see `GateOptions.split`).
   */
  readonly split?: (payload: unknown) => readonly unknown[];
}

/** The fields a preset may have: a gate option outside them is refused, not silently ignored. */
const PRESET_FIELDS = new Set([
  'name',
  'eventId',
  'subject',
  'occurredAt',
  'doneTtlMs',
  'digestFallback',
  'fingerprint',
  'split',
]);

/** Refuse a field a preset does not have (a gate option put in a preset would be ignored). */
function checkPresetFields(preset: object): void {
  const unknown = Object.keys(preset).find((field) => !PRESET_FIELDS.has(field));
  if (unknown !== undefined) {
    invalidOption(
      `provider.${unknown}`,
      `is not a preset field (a preset has ${[...PRESET_FIELDS].join(', ')}); set other options on the gate`,
    );
  }
}

/**
 * Define a provider preset, checked the way the built-in ones are: a wrong field throws a
 * `HookgateError` with code `INVALID_OPTIONS` here, not on the first delivery. The result is
 * a frozen copy, its selectors too. To adapt a built-in preset, spread it: `definePreset({ ...providers.stripe, … })`.
 *
 * @example
 * const acme = definePreset({
 *   name: 'acme',
 *   eventId: { header: 'Acme-Event-Id' },
 *   occurredAt: 'created_at',
 *   doneTtlMs: 48 * 3_600_000, // Acme retries for 24 hours
 * });
 * const gate = createGate({ store, provider: acme });
 */
export function definePreset<const P extends Preset>(preset: P): Readonly<P> {
  checkPreset(preset);
  return frozenCopy(preset);
}

/** A copy of `value` frozen all the way down: arrays and objects copied, functions as given. */
function frozenCopy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  const copy = Array.isArray(value)
    ? value.map(frozenCopy)
    : Object.fromEntries(Object.entries(value).map(([key, field]) => [key, frozenCopy(field)]));
  return Object.freeze(copy) as T;
}

/**
 * @internal Check a preset's fields and their values, naming the one at fault: what
 * {@link definePreset} checks, and `createGate` for an object given as `provider`.
 */
export function checkPreset(preset: Preset): void {
  if (typeof preset !== 'object' || preset === null) invalidOption('provider', 'must be an object');
  if (typeof preset.name !== 'string' || preset.name.trim() === '') {
    invalidOption('provider.name', 'must be a non-empty string');
  }
  checkPresetFields(preset);
  const { eventId, subject, occurredAt, doneTtlMs, digestFallback } = preset;
  if (eventId !== undefined) {
    const selectors: readonly Selector[] = Array.isArray(eventId) ? eventId : [eventId as Selector];
    if (selectors.length === 0) invalidOption('provider.eventId', 'must not be an empty array');
    for (const [i, s] of selectors.entries()) {
      compileSelector(s, selectors.length > 1 ? `provider.eventId[${i}]` : 'provider.eventId');
    }
  }
  if (subject !== undefined) compileSelector(subject, 'provider.subject');
  if (occurredAt !== undefined) compileSelector(occurredAt, 'provider.occurredAt');
  if (doneTtlMs !== undefined && !(Number.isSafeInteger(doneTtlMs) && doneTtlMs > 0)) {
    invalidOption('provider.doneTtlMs', 'must be a positive integer of milliseconds');
  }
  if (digestFallback !== undefined && typeof digestFallback !== 'boolean') {
    invalidOption('provider.digestFallback', 'must be a boolean');
  }
  if (preset.fingerprint !== undefined && typeof preset.fingerprint !== 'boolean') {
    invalidOption('provider.fingerprint', 'must be a boolean');
  }
  if (preset.split !== undefined && typeof preset.split !== 'function') {
    invalidOption('provider.split', 'must be a function');
  }
}

/** The built-ins go through the user-facing helper, typed as plain presets. */
const builtIn: (preset: Preset) => Preset = definePreset;

/**
 * Built-in presets. Each names its sources (see also docs/presets.md and docs/ttls.md); none
 * turns the sequence guard on (a policy only the application can choose), and none reads a
 * provider's per-attempt time as the event time.
 */
export const providers = {
  /**
   * Stripe: event id `id` (`evt_…`); event time `created`, unix seconds (whole seconds, so
   * same-second events about one object are common: see `sequence.ties`); subject
   * `data.object.id`. Live mode retries with exponential backoff for up to 3 days; the done
   * record lives 4. https://docs.stripe.com/webhooks#retries
   */
  stripe: builtIn({
    name: 'stripe',
    eventId: 'id',
    occurredAt: 'created',
    subject: 'data.object.id',
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * GitHub: event id the `X-GitHub-Delivery` GUID, which a redelivery keeps (it identifies the
   * event, and is shared by every hook subscribed to it: give each hook that posts to one
   * endpoint its own namespace). GitHub never retries on its own; a failed delivery can be
   * redelivered by hand or by API for 3 days (7 on GitHub Enterprise Server: raise `doneTtlMs`
   * there), so the record lives 4. No event time or subject common to every event type.
   * https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers
   * https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks
   */
  github: builtIn({
    name: 'github',
    eventId: { header: 'X-GitHub-Delivery' },
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * Shopify: event id the `X-Shopify-Webhook-Id` header, unique per webhook and kept across its
   * retries. Not `X-Shopify-Event-Id`, which every webhook one event triggers shares (several
   * topics, several subscriptions): keying on it would drop the second topic's webhook. Event
   * time the resource's `updated_at` (RFC 3339 with offset; `X-Shopify-Triggered-At` is the
   * other documented choice, see docs/presets.md); subject `admin_graphql_api_id`. Shopify
   * retries 8 times over 4 hours; the record lives 48.
   * https://shopify.dev/docs/apps/build/webhooks/delivery-structure
   * https://shopify.dev/changelog/updates-to-webhook-retry-mechanism
   */
  shopify: builtIn({
    name: 'shopify',
    eventId: { header: 'X-Shopify-Webhook-Id' },
    occurredAt: 'updated_at',
    subject: 'admin_graphql_api_id',
    doneTtlMs: 48 * HOUR,
  }),
  /**
   * Paddle Billing: event id `event_id` (`evt_…`; per destination, `notification_id` differs);
   * event time `occurred_at` (RFC 3339, microseconds); subject `data.id`. Live accounts are
   * retried up to 60 times over 3 days; the record lives 4.
   * https://developer.paddle.com/webhooks/about/respond-to-webhooks
   * https://developer.paddle.com/webhooks/about/how-webhooks-work
   */
  paddle: builtIn({
    name: 'paddle',
    eventId: 'event_id',
    occurredAt: 'occurred_at',
    subject: 'data.id',
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * Slack Events API: event id `event_id` (`Ev…`); event time `event_time`, unix seconds (whole
   * seconds); no subject common to every event type. Slack retries 3 times: at once, after 1
   * minute, after 5 minutes. The record lives a day. (`X-Slack-Request-Timestamp` is the
   * attempt's time, never used.) https://docs.slack.dev/apis/events-api/
   */
  slack: builtIn({
    name: 'slack',
    eventId: 'event_id',
    occurredAt: 'event_time',
    doneTtlMs: 24 * HOUR,
  }),
  /**
   * Standard Webhooks: event id the `webhook-id` header, which stays the same across retries;
   * event time the payload's `timestamp` (the spec's recommended payload field: when the event
   * occurred). The `webhook-timestamp` header is the attempt's time, never used. The spec's
   * example retry schedule spans about 75.5 hours; the record lives 96.
   * https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
   */
  standardWebhooks: builtIn({
    name: 'standardWebhooks',
    eventId: { header: 'webhook-id' },
    occurredAt: 'timestamp',
    doneTtlMs: 96 * HOUR,
  }),
  /**
   * Svix: event id the `svix-id` header (else `webhook-id`, which Svix-powered senders may send
   * instead); event time the payload's `timestamp` when the sender follows the Standard
   * Webhooks payload shape (`svix-timestamp` is the attempt's time, never used). Svix's
   * schedule ends about 27.6 hours after the first attempt; the record lives 72.
   * https://docs.svix.com/retries
   */
  svix: builtIn({
    name: 'svix',
    eventId: [{ header: 'svix-id' }, { header: 'webhook-id' }],
    occurredAt: 'timestamp',
    doneTtlMs: 72 * HOUR,
  }),
  /**
   * SendGrid Event Webhook: one POST carries a JSON array of events (`split`), each keyed by
   * its own `sg_event_id` and timed by `timestamp`, unix seconds. SendGrid resends a batch that
   * got a non-2xx for up to 24 hours; the record lives 48. No subject: the events of one
   * message (`sg_message_id`) share whole-second times and may arrive in any order, so the
   * sequence guard would drop real events. Signed with ECDSA (`X-Twilio-Email-Event-Webhook-*`
   * headers): verify before the gate.
   * https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook
   * https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event
   */
  sendgrid: builtIn({
    name: 'sendgrid',
    eventId: 'sg_event_id',
    occurredAt: 'timestamp',
    doneTtlMs: 48 * HOUR,
    split: (payload) => payload as readonly unknown[],
  }),
  /**
   * Sume: event id the envelope's `request_id`; event time its `created_at` (RFC 3339). Sume
   * makes 10 attempts with backoff of up to an hour between them (under 10 hours in all); the
   * record lives 24. Source: the hookgate design brief (Sume's integration guide).
   */
  sume: builtIn({
    name: 'sume',
    eventId: 'request_id',
    occurredAt: 'created_at',
    doneTtlMs: 24 * HOUR,
  }),
  /**
   * A grant portal: event id `id`, else the `X-Event-Id` header (legacy deliveries carry
   * neither and are keyed by digest); event time `occurred_at` (RFC 3339); subject `grant_id`.
   * The portal retries for 72 hours; the record lives 96. Source: the hookgate design brief
   * (the grant portal's integration guide).
   */
  grantPortal: builtIn({
    name: 'grantPortal',
    eventId: ['id', { header: 'X-Event-Id' }],
    occurredAt: 'occurred_at',
    subject: 'grant_id',
    doneTtlMs: 96 * HOUR,
  }),
} as const;

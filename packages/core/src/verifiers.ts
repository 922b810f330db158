/**
 * Built-in signature checks, one per provider, each a `verify` every binding accepts. They run
 * on Web Crypto only (HMAC-SHA256 through `crypto.subtle`), so they work wherever the core
 * does. Each secret is imported as a key once per verifier, on the first delivery.
 *
 * A verifier never throws at a delivery: a missing or malformed header, a signature in the
 * wrong encoding, a timestamp out of tolerance or a secret that cannot be a key all resolve
 * `false`, and the binding answers 401. Only a wrong `secret` or option throws, when the
 * verifier is built.
 */
import { optionError } from './errors.js';
import { readHeader } from './select.js';
import type { HeaderBag } from './types.js';

/**
 * A `verify` function, as `verifiers.<provider>()` returns it: every binding's `verify` option
 * accepts it (Express, Koa and Fastify pass a `Buffer` and Node's headers; Hono and fetch a
 * `Uint8Array` and `Headers`). Resolves `true` when the delivery carries a valid signature
 * made with one of the secrets, `false` otherwise; never rejects.
 */
export type Verifier = (rawBody: Uint8Array | string, headers: HeaderBag) => Promise<boolean>;

/**
 * A signing secret, or several while rotating one: a delivery signed with any of them passes.
 * A non-empty string, or a non-empty array of non-empty strings.
 */
export type VerifierSecret = string | readonly string[];

/** The options of a verifier whose provider signs a timestamp along with the body. */
export interface VerifierOptions {
  /**
   * How far the signed timestamp may be from the clock, in the past or the future, in seconds:
   * a captured delivery cannot be replayed once it is older. `Infinity` turns the check off.
   * @default 300 (5 minutes); 5 for `paddle`, as Paddle's own SDKs
   */
  tolerance?: number;
  /** The clock, in epoch milliseconds; inject one in tests. @default Date.now */
  now?: () => number;
}

/** What a provider's headers say was signed: the exact bytes, and the signatures offered. */
interface Signed {
  content: Uint8Array<ArrayBuffer>;
  signatures: Uint8Array[];
}

/** Web Crypto's `CryptoKey`, named so that it type-checks with DOM or with Node's types. */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** Reads a delivery: what was signed, or `undefined` when the headers do not allow a check. */
type Reader = (rawBody: Uint8Array | string, headers: HeaderBag) => Signed | undefined;

/** Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>…]` over `<t>.<body>`. */
function stripe(secret: VerifierSecret, options?: VerifierOptions): Verifier {
  const fresh = freshness('stripe', options, 300);
  return hmacVerifier('stripe', secret, utf8, (body, headers) => {
    const fields = pairs(readHeader(headers, 'stripe-signature'), ',');
    const t = only(fields.get('t'));
    if (t === undefined || !fresh(t)) return undefined;
    return { content: signedContent(`${t}.`, body), signatures: decodeAll(fields.get('v1'), hex) };
  });
}

/** GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body. No timestamp. */
function github(secret: VerifierSecret): Verifier {
  return hmacVerifier('github', secret, utf8, (body, headers) => {
    const signature = readHeader(headers, 'x-hub-signature-256');
    if (!signature?.startsWith('sha256=')) return undefined;
    return { content: signedContent('', body), signatures: decodeAll([signature.slice(7)], hex) };
  });
}

/** Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the body. No timestamp. */
function shopify(secret: VerifierSecret): Verifier {
  return hmacVerifier('shopify', secret, utf8, (body, headers) => {
    const signature = readHeader(headers, 'x-shopify-hmac-sha256');
    return { content: signedContent('', body), signatures: decodeAll([signature], base64) };
  });
}

/**
 * Standard Webhooks: `webhook-id`, `webhook-timestamp` (unix s) and `webhook-signature`
 * (space-separated `v1,<base64>`) over `<id>.<timestamp>.<body>`; the secret is `whsec_` and
 * the base64 of the key.
 */
function standardWebhooks(secret: VerifierSecret, options?: VerifierOptions): Verifier {
  return webhookSignature('standardWebhooks', secret, options, []);
}

/** Svix: Standard Webhooks, whose headers may also be named `svix-id`, `svix-timestamp`, `svix-signature`. */
function svix(secret: VerifierSecret, options?: VerifierOptions): Verifier {
  return webhookSignature('svix', secret, options, ['svix']);
}

/** Slack: `X-Slack-Signature: v0=<hex>` over `v0:<X-Slack-Request-Timestamp>:<body>`. */
function slack(secret: VerifierSecret, options?: VerifierOptions): Verifier {
  const fresh = freshness('slack', options, 300);
  return hmacVerifier('slack', secret, utf8, (body, headers) => {
    const timestamp = readHeader(headers, 'x-slack-request-timestamp');
    const signature = readHeader(headers, 'x-slack-signature');
    if (timestamp === undefined || !fresh(timestamp) || !signature?.startsWith('v0=')) {
      return undefined;
    }
    return {
      content: signedContent(`v0:${timestamp}:`, body),
      signatures: decodeAll([signature.slice(3)], hex),
    };
  });
}

/** Paddle Billing: `Paddle-Signature: ts=<unix s>;h1=<hex>[;h1=<hex>…]` over `<ts>:<body>`. */
function paddle(secret: VerifierSecret, options?: VerifierOptions): Verifier {
  const fresh = freshness('paddle', options, 5);
  return hmacVerifier('paddle', secret, utf8, (body, headers) => {
    const fields = pairs(readHeader(headers, 'paddle-signature'), ';');
    const ts = only(fields.get('ts'));
    if (ts === undefined || !fresh(ts)) return undefined;
    return { content: signedContent(`${ts}:`, body), signatures: decodeAll(fields.get('h1'), hex) };
  });
}

/**
 * Signature checks for the providers with presets, each `(secret, options?) => verify`. Pass
 * the result as a binding's `verify`; a delivery that fails it answers 401 and claims nothing.
 * See docs/verifiers.md.
 *
 * @example
 * app.post('/webhooks/stripe', hookgate({ gate, verify: verifiers.stripe(process.env.STRIPE_WEBHOOK_SECRET!) }), handler);
 */
export const verifiers = {
  /**
   * Stripe: the `Stripe-Signature` header's `t=` timestamp and `v1=` signatures (any one may
   * match), HMAC-SHA256 hex over `<t>.<raw body>` keyed with the endpoint's signing secret
   * (`whsec_…`, used as it is). Tolerance 300 s by default.
   */
  stripe,
  /**
   * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 over the raw body keyed with the
   * webhook's secret. GitHub signs no timestamp, so there is no tolerance.
   */
  github,
  /**
   * Shopify: `X-Shopify-Hmac-Sha256`, the base64 HMAC-SHA256 of the raw body keyed with the
   * app's client secret. Shopify signs no timestamp, so there is no tolerance.
   */
  shopify,
  /**
   * Standard Webhooks: `webhook-id`, `webhook-timestamp` and `webhook-signature` (one or more
   * space-separated `v1,<base64>`), HMAC-SHA256 over `<id>.<timestamp>.<raw body>` keyed with
   * the base64-decoded secret (`whsec_` prefix optional). Tolerance 300 s by default.
   */
  standardWebhooks,
  /**
   * Svix: as `standardWebhooks`, and also reads the `svix-id`, `svix-timestamp` and
   * `svix-signature` headers (each preferred to its `webhook-` twin, as Svix's SDK does).
   */
  svix,
  /**
   * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 over `v0:<timestamp>:<raw body>` keyed
   * with the app's signing secret, the timestamp from `X-Slack-Request-Timestamp`. Tolerance
   * 300 s by default.
   */
  slack,
  /**
   * Paddle Billing: `Paddle-Signature: ts=<unix s>;h1=<hex>` (any `h1` may match), HMAC-SHA256
   * over `<ts>:<raw body>` keyed with the notification destination's secret key
   * (`pdl_ntfset_…`, used as it is). Tolerance 5 s by default, as Paddle's own SDKs.
   */
  paddle,
} as const;

/** The Standard Webhooks scheme; `prefixes` are other names its three headers may carry. */
function webhookSignature(
  name: string,
  secret: VerifierSecret,
  options: VerifierOptions | undefined,
  prefixes: readonly string[],
): Verifier {
  const fresh = freshness(name, options, 300);
  return hmacVerifier(name, secret, whsec, (body, headers) => {
    const header = (field: string) => {
      for (const prefix of prefixes) {
        const value = readHeader(headers, `${prefix}-${field}`);
        if (value !== undefined) return value;
      }
      return readHeader(headers, `webhook-${field}`);
    };
    const id = header('id');
    const timestamp = header('timestamp');
    const signature = header('signature');
    if (id === undefined || timestamp === undefined || !fresh(timestamp)) return undefined;
    const v1 = (signature ?? '')
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => entry.slice(3));
    return {
      content: signedContent(`${id}.${timestamp}.`, body),
      signatures: decodeAll(v1, base64),
    };
  });
}

/**
 * The one verifier every provider is: read what was signed, HMAC it with each secret's key
 * (imported once, on first use), and compare with the signatures offered in constant time.
 */
function hmacVerifier(
  name: string,
  secret: VerifierSecret,
  keyBytes: (secret: string) => Uint8Array<ArrayBuffer>,
  read: Reader,
): Verifier {
  const secrets = checkedSecrets(name, secret);
  let keys: Promise<Array<HmacKey | undefined>> | undefined;
  return async function verify(rawBody, headers) {
    try {
      const signed = read(rawBody, headers);
      if (signed === undefined || signed.signatures.length === 0) return false;
      keys ??= Promise.all(secrets.map((s) => importKey(keyBytes, s)));
      for (const key of await keys) {
        if (key === undefined) continue;
        const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed.content));
        if (signed.signatures.some((signature) => equalBytes(mac, signature))) return true;
      }
      return false;
    } catch {
      return false;
    }
  };
}

/** A secret's HMAC-SHA256 key; `undefined` when it cannot be one (never matches). */
async function importKey(
  keyBytes: (secret: string) => Uint8Array<ArrayBuffer>,
  secret: string,
): Promise<HmacKey | undefined> {
  try {
    const raw = keyBytes(secret);
    return await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
  } catch {
    return undefined;
  }
}

function checkedSecrets(name: string, secret: VerifierSecret): readonly string[] {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (
    !Array.isArray(secrets) ||
    secrets.length === 0 ||
    !secrets.every((s) => typeof s === 'string' && s !== '')
  ) {
    throw optionError(
      `verifiers.${name}`,
      'secret',
      'must be a non-empty string, or a non-empty array of them (several while rotating)',
    );
  }
  return [...secrets];
}

/** Checks the options and returns whether a signed unix-seconds timestamp is fresh enough. */
function freshness(
  name: string,
  options: VerifierOptions | undefined,
  defaultTolerance: number,
): (timestamp: string) => boolean {
  const { tolerance = defaultTolerance, now = Date.now } = options ?? {};
  const owner = `verifiers.${name}`;
  if (typeof tolerance !== 'number' || Number.isNaN(tolerance) || tolerance < 0) {
    throw optionError(owner, 'tolerance', 'must be a non-negative number of seconds, or Infinity');
  }
  if (typeof now !== 'function') throw optionError(owner, 'now', 'must be a function');
  return (timestamp) =>
    /^\d{1,15}$/.test(timestamp) && Math.abs(now() / 1000 - Number(timestamp)) <= tolerance;
}

/** `k=v` fields separated by `separator`, each name with all its values in order. */
function pairs(header: string | undefined, separator: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const item of header?.split(separator) ?? []) {
    const at = item.indexOf('=');
    if (at < 0) continue;
    const name = item.slice(0, at).trim();
    const values = fields.get(name) ?? [];
    values.push(item.slice(at + 1).trim());
    fields.set(name, values);
  }
  return fields;
}

/** The single value of a field; a field given twice is malformed. */
function only(values: string[] | undefined): string | undefined {
  return values?.length === 1 ? values[0] : undefined;
}

/** The signatures that decode; one in another encoding simply never matches. */
function decodeAll(
  values: readonly (string | undefined)[] | undefined,
  decode: (text: string) => Uint8Array | undefined,
): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const value of values ?? []) {
    const bytes = value === undefined ? undefined : decode(value);
    if (bytes !== undefined && bytes.length > 0) out.push(bytes);
  }
  return out;
}

const encoder = new TextEncoder();

function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** A Standard Webhooks secret: `whsec_` (optional) and the base64 of the key. */
function whsec(secret: string): Uint8Array<ArrayBuffer> {
  const key = base64(secret.startsWith('whsec_') ? secret.slice(6) : secret);
  if (key === undefined) throw new TypeError('not base64');
  return key;
}

/** `prefix` then the body's bytes: what the provider signed. */
function signedContent(prefix: string, body: Uint8Array | string): Uint8Array<ArrayBuffer> {
  const head = encoder.encode(prefix);
  const tail = typeof body === 'string' ? encoder.encode(body) : body;
  const content = new Uint8Array(head.length + tail.length);
  content.set(head);
  content.set(tail, head.length);
  return content;
}

function hex(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (text.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(text)) return undefined;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++)
    bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function base64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}

/** Constant time in the contents: every byte is compared, whatever differs first. */
function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/**
 * A Stripe-style signature check over the exact body bytes, with Web Crypto only (it runs on
 * Node, the Edge runtime, Workers, Bun and Deno alike). The `Stripe-Signature` header reads
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (several `v1=` during a secret roll).
 */
const encoder = new TextEncoder();
/** How far the signed time may be from now, in seconds (Stripe's libraries use 300). */
const TOLERANCE_S = 300;

export async function verifyStripeSignature(
  rawBody: Uint8Array,
  headers: Headers,
): Promise<boolean> {
  // Read at request time: `next start` gets it from the environment, never from the build.
  const secret = process.env.STRIPE_WEBHOOK_SECRET;
  const header = headers.get('stripe-signature');
  if (!secret || header === null) return false;
  let timestamp: string | undefined;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.split('=', 2);
    if (name === 't') timestamp = value;
    else if (name === 'v1' && value !== undefined) {
      const bytes = fromHex(value);
      if (bytes !== undefined) signatures.push(bytes);
    }
  }
  if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) {
    return false;
  }
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return false;
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  const prefix = encoder.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.byteLength + rawBody.byteLength);
  signed.set(prefix);
  signed.set(rawBody, prefix.byteLength);
  // subtle.verify compares in constant time.
  for (const signature of signatures) {
    if (await crypto.subtle.verify('HMAC', key, signature, signed)) return true;
  }
  return false;
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (hex.length !== 64 || !/^[0-9a-f]+$/i.test(hex)) return undefined;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

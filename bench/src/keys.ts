/**
 * Key derivation: `deriveKey` by event id, and the digest path (canonical JSON + SHA-256)
 * against `JSON.stringify` + SHA-256 of the same object.
 */
import { hash } from 'node:crypto';
import { canonicalJson, deriveKey, providers } from '@hookgate/core';
import { portable } from '../../packages/core/src/sha256.js';
import { alternate, type Plan, type Row, syncSide } from './measure.js';

/** A deterministic PRNG (mulberry32), so that every run digests the same payloads. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A webhook-like payload of about `bytes` bytes of JSON: an envelope around an object with
 * line items, in the member order a provider writes (not sorted), with strings, integers,
 * decimals, booleans, nulls and some non-ASCII text.
 */
export function payloadOfSize(bytes: number, seed = 1): Record<string, unknown> {
  const random = prng(seed);
  const word = () => Math.floor(random() * 36 ** 6).toString(36);
  const item = (i: number) => ({
    sku: `SKU-${word()}`,
    description: `${word()} ${word()} — ${word()} ünits`,
    quantity: 1 + Math.floor(random() * 9),
    unit_amount: Math.round(random() * 100_000) / 100,
    taxable: random() < 0.5,
    metadata: { line: i, warehouse: word(), note: random() < 0.3 ? null : word() },
  });
  const items: unknown[] = [];
  const payload = {
    type: 'invoice.paid',
    created: 1_700_000_000,
    livemode: false,
    data: {
      object: {
        object: 'invoice',
        customer: `cus_${word()}`,
        currency: 'eur',
        total: 0,
        lines: items,
        status: 'paid',
      },
    },
    api_version: '2024-06-20',
  };
  while (JSON.stringify(payload).length < bytes) items.push(item(items.length));
  return payload;
}

/** The quickest SHA-256 Node has: one call, no Hash object (Node 20.12+). */
function sha256(text: string): string {
  return hash('sha256', text, 'hex');
}

export async function keysBench(plan: Plan): Promise<Row[]> {
  const rows: Row[] = [];

  const byId = { payload: { id: 'evt_1NG8Du2eZvKYlo2CUI0Ovq7n', type: 'invoice.paid' } };
  const stripe = { provider: providers.stripe };
  const [id] = await alternate([syncSide(() => deriveKey(byId, stripe))], plan);
  rows.push({
    section: 'Key derivation',
    name: 'deriveKey by event id (providers.stripe)',
    stats: id!,
    perCpu: true,
  });

  for (const [label, size] of [
    ['1 KB', 1024],
    ['16 KB', 16 * 1024],
    ['256 KB', 256 * 1024],
  ] as const) {
    const payload = payloadOfSize(size);
    const delivery = { payload };
    const [digest, base] = await alternate(
      [syncSide(() => deriveKey(delivery)), syncSide(() => sha256(JSON.stringify(payload)))],
      plan,
    );
    rows.push({
      section: 'Key derivation',
      name: `deriveKey digest, ${label} payload`,
      stats: digest!,
      baseline: { name: 'JSON.stringify + SHA-256', stats: base! },
      target: { ratio: 0.8 },
      perCpu: true,
    });
  }

  // Off Node (browsers, workerd without nodejs_compat) the digest hashes with @noble/hashes.
  for (const [label, size] of [
    ['1 KB', 1024],
    ['16 KB', 16 * 1024],
  ] as const) {
    const payload = payloadOfSize(size);
    const [pure, base] = await alternate(
      [
        syncSide(() => portable(canonicalJson(payload))),
        syncSide(() => sha256(canonicalJson(payload))),
      ],
      plan,
    );
    rows.push({
      section: 'Key derivation',
      name: `digest off Node (pure-JS SHA-256), ${label} payload`,
      stats: pure!,
      baseline: { name: 'the same with native SHA-256', stats: base! },
      perCpu: true,
    });
  }
  return rows;
}

/**
 * A body of many events (a gate with `split`): each event claimed, and the body answered for
 * all of them at once.
 */
import { type Admission, inFlightAnswer, refusal } from './answers.js';
import { mapConcurrently } from './batch.js';
import { type Claim, heldBack } from './claim.js';
import type { Gate } from './gate.js';
import { sha256 } from './sha256.js';
import type { Delivery, WebhookEvent } from './types.js';

/** How many events of one body are claimed at once. */
const BATCH_CONCURRENCY = 8;

/**
 * @internal A body of many events: claim each, and hand on the new ones together, or answer
 * for all. The provider resends a body as a whole, so the answer is 2xx only when every event
 * is settled for good (new, a duplicate, stale or a conflict); an event in flight elsewhere
 * (409), an invalid one (400) or a store failure (503) releases the claims taken, and the
 * resent body finds the events done meanwhile as duplicates.
 */
export async function admitBatch<TPayload>(
  gate: Gate<TPayload>,
  inFlight: 'retry' | 'ack',
  retryAfter: number,
  delivery: Delivery,
): Promise<Admission<TPayload>> {
  let events: Delivery[];
  try {
    events = gate.split(delivery);
  } catch (error) {
    return refusal(error, retryAfter);
  }
  // A throw (a gate of another making may throw rather than reject) is a failed attempt too.
  const claimAt = async (i: number): Promise<Attempt<TPayload>> => {
    try {
      return await gate.claim(events[i]!);
    } catch (error) {
      return { error };
    }
  };
  const attempts = await newestPerSubject(
    await mapConcurrently(
      events.map((_, i) => i),
      BATCH_CONCURRENCY,
      claimAt,
    ),
    claimAt,
  );
  const claims = attempts.filter((a): a is Claim<TPayload> => !('error' in a));
  const acquired = claims.filter((c) => c.acquired);
  const failure = attempts.find((a) => 'error' in a);
  // A second copy of an event in the body finds the first copy's claim: not in flight
  // elsewhere when the first was acquired, or ended stale or done. (A conflict may be another
  // worker's claim of the key, in flight.)
  const own = new Set(
    claims
      .filter((c) => c.acquired || c.status === 'stale' || c.status === 'duplicate')
      .map((c) => c.key),
  );
  const blocked = claims.some(
    (c) => c.status === 'in-flight' && !own.has(c.key) && (inFlight === 'retry' || heldBack(c)),
  );
  if (failure !== undefined || blocked) {
    await Promise.all(acquired.map((c) => c.release().catch(() => {})));
    if (failure !== undefined) return refusal((failure as { error: unknown }).error, retryAfter);
    return inFlightAnswer(retryAfter);
  }
  if (acquired.length === 0) {
    const status =
      claims.every((c) => c.status === 'stale') && claims.length > 0 ? 'stale' : 'duplicate';
    return { answer: { status: 200, body: { status }, headers: {} } };
  }
  return { claim: new BatchClaim(acquired) as unknown as Claim<TPayload> };
}

type Attempt<TPayload> = Claim<TPayload> | { error: unknown };

/**
 * Under the sequence guard, a body's events of one subject hold each other back: the first one
 * claimed holds the subject, and the others are `held`, on every attempt of the body. Resolve
 * it as if the newest had come first: it is the one applied (on a tie, the one holding the
 * subject), and the others meet its watermark as `stale`. When the newest was held, the body's
 * claim of the subject is released and the newest claimed again first. Under `ties: 'apply'`,
 * an event tied with the applied one is `held` again: the body is answered 409 until a body
 * without the tie comes.
 */
async function newestPerSubject<TPayload>(
  attempts: Attempt<TPayload>[],
  claimAt: (i: number) => Promise<Attempt<TPayload>>,
): Promise<Attempt<TPayload>[]> {
  const groups = new Map<string, { holder?: number; held: number[] }>();
  const group = (subject: string) => {
    let found = groups.get(subject);
    if (found === undefined) {
      found = { held: [] };
      groups.set(subject, found);
    }
    return found;
  };
  attempts.forEach((attempt, i) => {
    if ('error' in attempt || attempt.event.subject === undefined) return;
    if (attempt.acquired) group(attempt.event.subject).holder = i;
    else if (heldBack(attempt)) group(attempt.event.subject).held.push(i);
  });
  const result = attempts.slice();
  const at = (i: number) => (result[i] as Claim).event.occurredAt ?? Number.NEGATIVE_INFINITY;
  await Promise.all(
    [...groups.values()].map(async ({ holder, held }) => {
      if (holder === undefined || held.length === 0) return;
      // Oldest first; on a tie, the event that holds the subject last (it stays applied).
      const members = [holder, ...held].sort(
        (a, b) => at(a) - at(b) || (a === holder ? 1 : b === holder ? -1 : a - b),
      );
      const newest = members.pop()!;
      if (newest !== holder) {
        const released = await (result[holder] as Claim).release().then(
          () => undefined,
          (error: unknown) => ({ error }),
        );
        if (released !== undefined) {
          result[holder] = released;
          return;
        }
        result[newest] = await claimAt(newest);
      }
      for (const i of members) result[i] = await claimAt(i);
    }),
  );
  return result;
}

/** The claims of a body's new events, settled together from one answer. */
class BatchClaim implements Claim<unknown[]> {
  readonly status = 'acquired';
  readonly acquired = true;
  readonly key: string;
  readonly source = 'digest';
  readonly event: WebhookEvent<unknown[]>;
  readonly #claims: readonly Claim[];

  constructor(claims: readonly Claim[]) {
    this.#claims = claims;
    const events = claims.map((c) => c.event);
    this.key = `dig:${sha256(events.map((e) => e.key).join('\n'))}`;
    this.event = { key: this.key, source: 'digest', payload: events.map((e) => e.payload), events };
  }

  done(): Promise<void> {
    return this.#each((c) => c.done());
  }

  release(): Promise<void> {
    return this.#each((c) => c.release());
  }

  fail(error?: unknown): Promise<void> {
    return this.#each((c) => c.fail(error));
  }

  extend(ms?: number): Promise<void> {
    return this.#each((c) => c.extend(ms));
  }

  /** Settle every claim, even when one fails; then reject with the first failure. */
  async #each(settle: (claim: Claim) => Promise<void>): Promise<void> {
    const results = await Promise.allSettled(this.#claims.map(settle));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}

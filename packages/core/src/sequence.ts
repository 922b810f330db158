import type { Report } from './decisions.js';
import { toStoreError } from './errors.js';
import type { ResolvedGateOptions } from './gate-options.js';
import type { Prepared } from './prepare.js';
import type { AdvanceState } from './store.js';

/**
 * @internal The sequence guard, on a claim the caller has just acquired with `token`: one
 * atomic `advance` of the subject's watermark, which also takes the subject's hold, so that one
 * event per subject is processed at a time.
 *
 * - `applied`: go on; the lease releases the hold when it settles.
 * - `stale`: the claim is marked done, so that redeliveries are plain duplicates.
 * - `held`: another event of the subject is being processed; the claim is released, so that
 *   the provider's next attempt can claim it again and meet the watermark then.
 *
 * @throws StoreUnavailableError (reported) when the store failed; the claim is then released
 * on a best-effort basis (it expires after `claimTtlMs` otherwise).
 */
export async function advanceSubject(
  options: ResolvedGateOptions,
  report: Report,
  prepared: Prepared,
  token: string,
): Promise<AdvanceState> {
  const { store, claimTtlMs, doneTtlMs, sequence } = options;
  const { event, claimKey } = prepared;
  let state: AdvanceState;
  try {
    state = await store.advance(prepared.subjectKey!, {
      at: event.occurredAt!,
      eventKey: event.key,
      token,
      holdMs: claimTtlMs,
      ttlMs: sequence!.ttlMs,
      ties: sequence!.ties,
    });
    if (state === 'stale') await store.done(claimKey, token, doneTtlMs, prepared.fingerprint);
    else if (state === 'held') await store.release(claimKey, token);
  } catch (error) {
    const failure = toStoreError(error, 'advance');
    report('store-unavailable', event, { reason: 'advance', error: failure });
    // Free the key now rather than after claimTtlMs; a failure here changes nothing more.
    releaseQuietly(options, claimKey, token);
    throw failure;
  }
  return state;
}

async function releaseQuietly(
  { store }: ResolvedGateOptions,
  claimKey: string,
  token: string,
): Promise<void> {
  try {
    await store.release(claimKey, token);
  } catch {
    // The claim expires after claimTtlMs.
  }
}

import type { Report } from './decisions.js';
import { toStoreError, unreadableAnswer } from './errors.js';
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
 * @throws StoreUnavailableError (reported) when the store failed, or answered something
 * outside `AdvanceState`; the claim is then released on a best-effort basis (it expires after
 * `claimTtlMs` otherwise), and so is the subject's hold when `advance` itself failed (a call
 * that timed out may have been applied, and taken it).
 */
export async function advanceSubject(
  options: ResolvedGateOptions,
  report: Report,
  prepared: Prepared,
  token: string,
): Promise<AdvanceState> {
  const { store, claimTtlMs, doneTtlMs, sequence } = options;
  const { event, claimKey } = prepared;
  const subjectKey = prepared.subjectKey!;
  let state: AdvanceState | undefined;
  try {
    const answer = await store.advance(subjectKey, {
      at: event.occurredAt!,
      eventKey: event.key,
      token,
      holdMs: claimTtlMs,
      ttlMs: sequence!.ttlMs,
      ties: sequence!.ties,
    });
    if (answer !== 'applied' && answer !== 'stale' && answer !== 'held') {
      throw unreadableAnswer('advance', answer);
    }
    state = answer;
    if (state === 'stale') await store.done(claimKey, token, doneTtlMs, prepared.fingerprint);
    else if (state === 'held') await store.release(claimKey, token);
  } catch (error) {
    const failure = toStoreError(error, 'advance');
    report('store-unavailable', event, { reason: 'advance', error: failure });
    // Free the key (and the hold, if the advance took it after all) now rather than after
    // claimTtlMs; both are owner-checked, and a failure here changes nothing more.
    releaseQuietly(() => store.release(claimKey, token));
    if (state === undefined) releaseQuietly(() => store.releaseHold(subjectKey, token));
    throw failure;
  }
  return state;
}

/** A release whose failure changes nothing: what it frees expires after claimTtlMs. */
async function releaseQuietly(release: () => Promise<boolean>): Promise<void> {
  try {
    await release();
  } catch {
    // It expires after claimTtlMs.
  }
}

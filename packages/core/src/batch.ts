import { createError, ErrorCode } from './errors.js';
import type { BatchResult } from './types.js';

/**
 * @internal `map` over `items` with at most `concurrency` calls pending at once; results in
 * the items' order. `fn` must not reject.
 */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** The part of an SQS record that {@link sqsBatchResponse} reads. */
export interface SqsRecordLike {
  /** The message id, which SQS takes back as `itemIdentifier`. */
  messageId: string;
}

/** An AWS Lambda SQS partial batch response (with `ReportBatchItemFailures` enabled). */
export interface SqsBatchResponse {
  /** The messages to leave on the queue, for another receive. */
  batchItemFailures: {
    /** The `messageId` of a record that failed. */
    itemIdentifier: string;
  }[];
}

/**
 * Turn `gate.runBatch` results into the partial batch response of an AWS Lambda SQS consumer
 * (`ReportBatchItemFailures` on the event source mapping): the messages that `failed`, or
 * whose event was `in-flight` in another worker, stay on the queue and come back; the
 * others are deleted. An in-flight event is retried rather than acknowledged because the
 * attempt holding it may still fail.
 *
 * A FIFO queue keeps a message group in order only if nothing after a failure is deleted:
 * with `{ fifo: true }` every message from the first one retried onwards is reported
 * (those already processed come back as duplicates).
 *
 * @example
 * export const handler = async (event: { Records: { messageId: string; body: string }[] }) => {
 *   const results = await gate.runBatch(event.Records.map((r) => ({ rawBody: r.body })), work);
 *   return sqsBatchResponse(event.Records, results);
 * };
 * @throws HookgateError `INVALID_OPTIONS` when `records` and `results` differ in length
 */
export function sqsBatchResponse(
  records: readonly SqsRecordLike[],
  results: readonly BatchResult[],
  options: { fifo?: boolean } = {},
): SqsBatchResponse {
  if (records.length !== results.length) {
    throw createError(
      'sqsBatchResponse',
      ErrorCode.INVALID_OPTIONS,
      `${records.length} records but ${results.length} results: pass the results of runBatch over these records`,
    );
  }
  const retried = results.map((r) => r.status === 'failed' || r.status === 'in-flight');
  const first = retried.indexOf(true);
  return {
    batchItemFailures: records
      .filter((_, i) => (options.fifo && first !== -1 ? i >= first : retried[i]))
      .map((record) => ({ itemIdentifier: record.messageId })),
  };
}

/**
 * gate.runBatch and sqsBatchResponse: a queue consumer's batch, one result per delivery in
 * order, bounded concurrency, and the SQS partial batch response built from the results,
 * driven through a queue that redelivers what the response leaves on it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../memory/src/index.js';
import {
  type BatchResult,
  createGate,
  HookgateError,
  InvalidDeliveryError,
  StoreUnavailableError,
  sqsBatchResponse,
} from '../src/index.js';

/** An SQS record as Lambda hands it over (the shape of the AWS docs' example event). */
function sqsRecord(body: unknown, messageId: string = randomUUID()) {
  return {
    messageId,
    receiptHandle: `AQEB${messageId.replaceAll('-', '')}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1545082649183',
      SenderId: 'AIDAIENQZJOLO23YVJ4VO',
      ApproximateFirstReceiveTimestamp: '1545082649185',
    },
    messageAttributes: {},
    md5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-2:123456789012:my-queue',
    awsRegion: 'us-east-2',
  };
}
type SqsRecord = ReturnType<typeof sqsRecord>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('gate.runBatch', () => {
  it('resolves one result per delivery, in order, whatever order the handlers finish in', async () => {
    const gate = createGate<{ id: string; wait: number }>({
      store: new MemoryStore(),
      eventId: 'id',
    });
    const results = await gate.runBatch(
      [5, 1, 3, 0, 2].map((wait) => ({ payload: { id: `evt_${wait}`, wait } })),
      async (event) => {
        await sleep(event.payload.wait * 5);
        return event.payload.wait;
      },
    );
    expect(results).toEqual(
      [5, 1, 3, 0, 2].map((wait) => ({
        status: 'processed',
        key: `evt:evt_${wait}`,
        result: wait,
      })),
    );
  });

  it('runs at most `concurrency` handlers at once (8 by default)', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    const peak = async (concurrency?: number) => {
      let running = 0;
      let most = 0;
      const deliveries = Array.from({ length: 20 }, () => ({ payload: { id: randomUUID() } }));
      await gate.runBatch(
        deliveries,
        async () => {
          most = Math.max(most, ++running);
          await sleep(5);
          running--;
        },
        concurrency === undefined ? {} : { concurrency },
      );
      return most;
    };
    expect(await peak()).toBe(8);
    expect(await peak(3)).toBe(3);
    expect(await peak(1)).toBe(1);
    await expect(gate.runBatch([], async () => {}, { concurrency: 0 })).rejects.toThrow(
      HookgateError,
    );
  });

  it('never rejects: a handler error, an invalid delivery and a store failure are failed results, and the failed claim is released', async () => {
    const store = new MemoryStore();
    const gate = createGate({ store, eventId: 'id', digestFallback: false });
    const boom = new Error('boom');
    const results = await gate.runBatch(
      [{ payload: { id: 'evt_ok' } }, { payload: { id: 'evt_boom' } }, { rawBody: '{"no":"id"}' }],
      async (event) => {
        if (event.key === 'evt:evt_boom') throw boom;
      },
    );
    expect(results[0]).toEqual({ status: 'processed', key: 'evt:evt_ok', result: undefined });
    expect(results[1]).toEqual({ status: 'failed', error: boom });
    expect(results[2]).toMatchObject({ status: 'failed' });
    expect((results[2] as { error: unknown }).error).toBeInstanceOf(InvalidDeliveryError);
    // Released: the retry runs it.
    expect((await gate.run({ payload: { id: 'evt_boom' } }, () => 'again')).status).toBe(
      'processed',
    );

    const down = new MemoryStore();
    down.claim = () => Promise.reject(new Error('ECONNREFUSED'));
    const broken = createGate({ store: down, eventId: 'id' });
    const [failed] = await broken.runBatch([{ payload: { id: 'evt_1' } }], async () => {});
    expect((failed as { error: unknown }).error).toBeInstanceOf(StoreUnavailableError);
  });

  it('two deliveries of one event in one batch run it once', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    let runs = 0;
    const results = await gate.runBatch(
      [{ payload: { id: 'evt_1' } }, { payload: { id: 'evt_1' } }],
      async () => {
        runs++;
        await sleep(10);
      },
    );
    expect(runs).toBe(1);
    expect(results.map((r) => r.status).sort()).toEqual(['in-flight', 'processed']);
  });
});

describe('sqsBatchResponse', () => {
  const results = (...statuses: BatchResult['status'][]): BatchResult[] =>
    statuses.map((status) =>
      status === 'failed'
        ? { status, error: new Error('x') }
        : ({ status, key: 'k' } as BatchResult),
    );

  it('leaves the failed and the in-flight messages on the queue, and deletes the rest', () => {
    const records = ['m1', 'm2', 'm3', 'm4', 'm5'].map((id) => sqsRecord({ id }, id));
    expect(
      sqsBatchResponse(records, results('processed', 'failed', 'duplicate', 'in-flight', 'stale')),
    ).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm4' }] });
    expect(
      sqsBatchResponse(
        records,
        results('processed', 'processed', 'duplicate', 'stale', 'conflict'),
      ),
    ).toEqual({
      batchItemFailures: [],
    });
  });

  it('on a FIFO queue, reports every message from the first one retried onwards', () => {
    const records = ['m1', 'm2', 'm3', 'm4'].map((id) => sqsRecord({ id }, id));
    expect(
      sqsBatchResponse(records, results('processed', 'failed', 'processed', 'duplicate'), {
        fifo: true,
      }),
    ).toEqual({
      batchItemFailures: [
        { itemIdentifier: 'm2' },
        { itemIdentifier: 'm3' },
        { itemIdentifier: 'm4' },
      ],
    });
    expect(
      sqsBatchResponse(records, results('processed', 'processed', 'processed', 'processed'), {
        fifo: true,
      }),
    ).toEqual({ batchItemFailures: [] });
  });

  it('refuses results that do not match the records', () => {
    expect(() => sqsBatchResponse([sqsRecord({ id: 'a' })], [])).toThrow(/1 records but 0 results/);
  });

  it('drives a queue to exactly one run per event, through handler failures and duplicate messages', async () => {
    const gate = createGate({ store: new MemoryStore(), eventId: 'id' });
    // 30 events, 10 of them sent twice (a producer retry: another message, the same event).
    const events = Array.from({ length: 30 }, (_, i) => ({ id: `evt_${i}`, amount: i }));
    let queue: SqsRecord[] = [...events, ...events.slice(0, 10)].map((e) => sqsRecord(e));
    const runs = new Map<string, number>();
    const failOnce = new Set(['evt:evt_3', 'evt:evt_17', 'evt:evt_25']);
    const handler = async (event: { key: string }) => {
      if (failOnce.delete(event.key)) throw new Error('transient');
      runs.set(event.key, (runs.get(event.key) ?? 0) + 1);
    };
    // The Lambda: batches of 10; whatever batchItemFailures names goes back on the queue.
    for (let receive = 0; queue.length > 0 && receive < 20; receive++) {
      const batch = queue.slice(0, 10);
      queue = queue.slice(10);
      const outcome = await gate.runBatch(
        batch.map((r) => ({ rawBody: r.body })),
        handler,
      );
      const { batchItemFailures } = sqsBatchResponse(batch, outcome);
      const retry = new Set(batchItemFailures.map((f) => f.itemIdentifier));
      queue.push(...batch.filter((r) => retry.has(r.messageId)));
    }
    expect(queue).toEqual([]);
    expect(runs.size).toBe(30);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
  });
});

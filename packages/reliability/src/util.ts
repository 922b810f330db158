export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Run `work` on every item, `lanes` at a time, each lane taking the next item when it is free. */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

/** Poll `check` until it holds, or throw after `timeoutMs`. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(check)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`never happened within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

/** A seed from `HOOKGATE_SEED`, or a fresh one; printed so that a failure can be replayed. */
export function seed(): number {
  const given = Number(process.env['HOOKGATE_SEED']);
  return Number.isSafeInteger(given) && given > 0 ? given : Math.floor(Math.random() * 2 ** 31);
}

// Waits until `condition` holds, checking often; fails with `what` after the deadline.
const POLL_INTERVAL_MS = 10;
const DEFAULT_DEADLINE_MS = 5_000;

export async function waitFor(
  what: string,
  condition: () => boolean,
  deadlineMs = DEFAULT_DEADLINE_MS,
): Promise<void> {
  const giveUpAt = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

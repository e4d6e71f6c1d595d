// Waiting on a condition instead of sleeping on luck: polls `condition` until it holds, and fails naming
// `what` after `timeoutMs` (generous: a fully loaded CI machine is slow, and a pass returns at once).
const POLL_INTERVAL_MS = 10;
const DEFAULT_TIMEOUT_MS = 10_000;

export async function waitFor(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

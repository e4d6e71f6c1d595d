// The process's clock in µs since the epoch, for the store's limits and deadlines. Monotonic: a
// wall-clock step (NTP, an operator) must neither refill nor drain a limit, nor move a deadline.
import { performance } from 'node:perf_hooks';

export const MICROS_PER_MILLISECOND = 1_000;

/** µs since the epoch as the process saw it at start-up, advanced by the monotonic clock since. */
export function monotonicEpochMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * MICROS_PER_MILLISECOND);
}

// Keeps a failing store off the request path: once tripped, requests skip the store entirely (no timeout
// to wait out, no connection attempt) until a background probe succeeds, then it closes by itself. One
// breaker per connection: the rate limiter and request ownership share it, so one failed call takes both
// off the store at once and one probe brings both back.
import type { ObserveStore } from '../metrics.ts';
import { commandDeadline, type RedisConnection } from './connection.ts';

/** What a store user does while the store cannot answer: serve from a per-replica fallback, or refuse. */
export type StoreFailMode = 'open' | 'closed';

const DEFAULT_STORE_PROBE_INTERVAL_MS = 250;
/** Retry-After for store_unavailable: a few probe intervals, rounded to the header's whole seconds. */
export const STORE_UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export interface StoreBreaker {
  readonly open: boolean;
  /** Opens the breaker; true when this call opened it (it was closed). */
  trip(): boolean;
  /** Calls `listener` on every change, with the new state. */
  onChange(listener: (open: boolean) => void): void;
  /** Stops probing for good (shutdown). */
  stop(): void;
}

export interface StoreBreakerOptions {
  /** Resolves when the store answers in time. */
  probe: () => Promise<void>;
  probeIntervalMs: number;
}

export function createStoreBreaker(options: StoreBreakerOptions): StoreBreaker {
  let open = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((open: boolean) => void)[] = [];

  function change(to: boolean): void {
    open = to;
    for (const listener of listeners) listener(to);
  }

  function scheduleProbe(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      options.probe().then(() => {
        if (!stopped) change(false);
      }, scheduleProbe);
    }, options.probeIntervalMs);
    // Probing alone must not keep a process alive that has nothing else to do.
    timer.unref();
  }

  return {
    get open() {
      return open;
    },
    trip() {
      if (open || stopped) return false;
      change(true);
      scheduleProbe();
      return true;
    },
    onChange(listener) {
      listeners.push(listener);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** The breaker of one Redis connection, probed with PING (each probe observed as the `ping` operation). */
export function createConnectionBreaker(
  connection: RedisConnection,
  options: { commandTimeoutMs: number; probeIntervalMs?: number; observeStore?: ObserveStore },
): StoreBreaker {
  const bounded = commandDeadline(connection, options.commandTimeoutMs);
  return createStoreBreaker({
    probeIntervalMs: options.probeIntervalMs ?? DEFAULT_STORE_PROBE_INTERVAL_MS,
    probe: async () => {
      const started = performance.now();
      let failed = true;
      try {
        await bounded(connection.ping());
        failed = false;
      } finally {
        options.observeStore?.('ping', (performance.now() - started) / 1000, failed);
      }
    },
  });
}

// Keeps a failing store off the request path: once tripped, requests skip the store entirely (no timeout
// to wait out, no connection attempt) until a background probe succeeds, then it closes by itself.
/** What a store user does while the store cannot answer: serve from a per-replica fallback, or refuse. */
export type StoreFailMode = 'open' | 'closed';

export const DEFAULT_STORE_PROBE_INTERVAL_MS = 250;
/** Retry-After for store_unavailable: a few probe intervals, rounded to the header's whole seconds. */
export const STORE_UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export interface StoreBreaker {
  readonly open: boolean;
  /** Opens the breaker; true when this call opened it (it was closed). */
  trip(): boolean;
  /** Stops probing for good (shutdown). */
  stop(): void;
}

export interface StoreBreakerOptions {
  /** Resolves when the store answers in time. */
  probe: () => Promise<void>;
  probeIntervalMs: number;
  onChange: (open: boolean) => void;
}

export function createStoreBreaker(options: StoreBreakerOptions): StoreBreaker {
  let open = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  function scheduleProbe(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      options.probe().then(() => {
        if (stopped) return;
        open = false;
        options.onChange(false);
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
      open = true;
      options.onChange(true);
      scheduleProbe();
      return true;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

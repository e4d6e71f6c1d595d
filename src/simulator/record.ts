// What reached the simulator, in arrival order, so a test can prove what did or did not get upstream.
import type { IncomingHttpHeaders } from 'node:http';

export interface ReceivedRequest {
  method: string;
  /** The request target exactly as sent (path and query). */
  url: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes; empty until the body has been read, and for GET/HEAD (never read). */
  body: Buffer;
  /** Arrival time, epoch milliseconds from the simulator's clock. */
  at: number;
}

export interface RequestRecord {
  /** Live array: entries are appended as requests arrive. */
  readonly entries: ReceivedRequest[];
  add(request: Omit<ReceivedRequest, 'body'>): ReceivedRequest;
  clear(): void;
}

// A demo left running keeps only the latest requests: enough for any test, bounded for a long run.
const MAX_RECORDED_REQUESTS = 10_000;

export function createRequestRecord(): RequestRecord {
  const entries: ReceivedRequest[] = [];
  return {
    entries,
    add(request) {
      const entry = { ...request, headers: { ...request.headers }, body: Buffer.alloc(0) };
      if (entries.length >= MAX_RECORDED_REQUESTS) entries.shift();
      entries.push(entry);
      return entry;
    },
    clear() {
      // Emptied in place: holders of `entries` keep seeing the live record.
      entries.length = 0;
    },
  };
}

// One count, per process, of the bytes held for exchanges in flight: request bodies being read (each is
// read whole before it is forwarded), upstream bodies being read (each read whole before the client is
// answered) and answers handed to a client's socket that have not left yet (a client that reads slowly,
// or never). Each is bounded on its own (server.bodyLimitBytes, upstream.maxResponseBytes,
// server.sendTimeoutMs), but not their sum: twenty unread polls of a 32 MiB record held 885 MiB, eight
// endless upstream bodies 64 MiB each. Past `server.maxBytesInFlight` a request body is refused before it
// is read and an upstream answer is cut, either answered 503 overloaded (docs/reliability.md, "Overload").
// Counting is a sum and a comparison per chunk.

export interface BytesInFlight {
  /** Counts `bytes` more if they fit under the bound; false (nothing counted) when they do not. */
  hold(bytes: number): boolean;
  /** Counts `bytes` more whether they fit or not: an answer already built, handed to a socket. */
  add(bytes: number): void;
  release(bytes: number): void;
  /** The bytes counted now. */
  held(): number;
  readonly limit: number;
}

export function createBytesInFlight(limit: number): BytesInFlight {
  let held = 0;
  return {
    limit,
    hold(bytes) {
      if (held + bytes > limit) return false;
      held += bytes;
      return true;
    },
    add(bytes) {
      held += bytes;
    },
    release(bytes) {
      held -= bytes;
    },
    held: () => held,
  };
}

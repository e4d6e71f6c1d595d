// store.kind memory: ownership in this process, for a single replica (and as the fail-open fallback of
// the Redis store). Bounded by expiry: every record dies `ttlMs` after its last write.
import {
  canonicalRequestId,
  claimOutcomeOf,
  type OwnershipRecord,
  type OwnershipStore,
  type SubmissionResponse,
} from '../../ownership/store.ts';

interface ExpiringRecord extends OwnershipRecord {
  expiresAtMs: number;
}

export interface MemoryOwnershipStore extends OwnershipStore {
  /** The live record of an id with its expiry, for the Redis store's write-back. */
  recordOf(requestId: string): (OwnershipRecord & { expiresAtMs: number }) | undefined;
}

export function createMemoryOwnershipStore(options: {
  ttlMs: number;
  now?: () => number;
}): MemoryOwnershipStore {
  const { ttlMs } = options;
  const now = options.now ?? Date.now;
  // Every write re-inserts its record with the same TTL, so insertion order is expiry order and the
  // expired records are always at the head.
  const records = new Map<string, ExpiringRecord>();

  function sweepExpired(nowMs: number): void {
    for (const [id, record] of records) {
      if (record.expiresAtMs > nowMs) return;
      records.delete(id);
    }
  }

  function live(id: string): ExpiringRecord | undefined {
    const record = records.get(id);
    return record !== undefined && record.expiresAtMs > now() ? record : undefined;
  }

  function write(id: string, tenantId: string, response: SubmissionResponse | undefined): void {
    const nowMs = now();
    sweepExpired(nowMs);
    records.delete(id);
    records.set(id, { tenantId, response, expiresAtMs: nowMs + ttlMs });
  }

  return {
    claim(requestId, tenantId) {
      const id = canonicalRequestId(requestId);
      const record = live(id);
      if (record !== undefined) return Promise.resolve(claimOutcomeOf(record, tenantId));
      write(id, tenantId, undefined);
      return Promise.resolve({ kind: 'claimed' });
    },
    complete(requestId, tenantId, response) {
      const id = canonicalRequestId(requestId);
      if (live(id)?.tenantId === tenantId) write(id, tenantId, response);
      return Promise.resolve();
    },
    release(requestId) {
      records.delete(canonicalRequestId(requestId));
      return Promise.resolve();
    },
    owns(requestId, tenantId) {
      return Promise.resolve(live(canonicalRequestId(requestId))?.tenantId === tenantId);
    },
    recordOf(requestId) {
      return live(canonicalRequestId(requestId));
    },
    close() {
      records.clear();
      return Promise.resolve();
    },
  };
}

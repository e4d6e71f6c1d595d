// store.kind redis: one key per request id, so every replica sees every claim. Each operation is one
// bounded round trip on one key (Cluster-safe), except that on a single Redis the answers recorded in one
// event-loop turn share one call (send-per-turn.ts). When the store fails, a circuit breaker keeps it off
// the request path until a probe answers; meanwhile `failMode` decides (see docs/ownership.md): `closed`
// refuses with store_unavailable, `open` claims in a per-replica memory store and writes those records
// back once the store answers. Neither mode ever lets a tenant reach an id the gateway cannot tie to it.
import { gatewayError } from '../../errors/registry.ts';
import { canonicalRequestId, claimOutcomeOf, type OwnershipStore } from '../../ownership/store.ts';
import { createMemoryOwnershipStore } from '../memory/ownership-store.ts';
import { batchPerTurn } from './send-per-turn.ts';
import { STORE_UNAVAILABLE_RETRY_AFTER_SECONDS } from './circuit-breaker.ts';
import { isWrongTypeReply } from './connection.ts';
import { ownershipKey } from './keys.ts';
import {
  NO_RECORD_REPLY,
  decodeRecord,
  encodeRecord,
  pendingClaimRecord,
  refuseKeyWithoutRecord,
} from './ownership-record.ts';
import {
  claimScript,
  recordRequestIdsScript,
  releasePendingScript,
  undoClaimScript,
  type RecordWrite,
} from './scripts.ts';
import type { StoreClock } from './store-clock.ts';
import type { StoreCalls } from './store-calls.ts';

/** 1 when the record was written, 0 when another tenant holds its id. */
type Written = 0 | 1;

function writtenOf(reply: unknown, count: number): Written[] {
  if (!Array.isArray(reply) || reply.length !== count || !reply.every((one) => one === 0 || one === 1)) {
    throw new Error('unexpected record script reply');
  }
  return reply as Written[];
}

const KEY_WITHOUT_RECORD = Symbol('key without record');

/**
 * The claim script's reply: undefined when the id was claimed, the record that holds it, or
 * KEY_WITHOUT_RECORD when its key holds something else.
 */
function claimReplyOf(reply: unknown, clock: StoreClock): string | typeof KEY_WITHOUT_RECORD | undefined {
  if (!Array.isArray(reply) || typeof reply[0] !== 'number') throw new Error('unexpected claim script reply');
  clock.observe(reply[0]);
  const existing: unknown = reply[1];
  if (existing === undefined) return undefined;
  if (existing === NO_RECORD_REPLY && reply[2] === 1) return KEY_WITHOUT_RECORD;
  if (typeof existing !== 'string') throw new Error('unexpected claim script reply');
  return existing;
}

function storeUnavailable() {
  return gatewayError('ownership_store_unavailable', {
    headers: { 'retry-after': String(STORE_UNAVAILABLE_RETRY_AFTER_SECONDS) },
  });
}

/** What a call answers when the store did not: whether it was sent (the store may have run it). */
const notAnswered = (sent: boolean) => ({ ok: false as const, sent });
const answered = <T>(value: T) => ({ ok: true as const, value });

export function createRedisOwnershipStore(calls: StoreCalls, options: { ttlMs: number }): OwnershipStore {
  const { connection, breaker, failMode, logger, clock, undos } = calls;
  const { ttlMs } = options;
  const writeRecords = async (records: readonly RecordWrite[]): Promise<Written[]> =>
    writtenOf(await calls.run(recordRequestIdsScript, records), records.length);
  const writeOne = async (record: RecordWrite): Promise<Written> =>
    (await writeRecords([record]))[0] as Written;
  // The answers landing in one turn are recorded in one call, sent before any later command so that
  // whatever reads the id next sees the answer (send-per-turn.ts). A Cluster spreads request ids over
  // its slots, and one script may only touch one slot, so there each record goes alone.
  const answerRecords =
    calls.turn === undefined ? undefined : batchPerTurn(writeRecords, calls.turn.beforeNextCommand);
  const writeAnswerRecord = answerRecords === undefined ? writeOne : answerRecords.add;
  // Fail-open only: claims made while the store was down, and the ids still to write back to it.
  const fallback = createMemoryOwnershipStore({ ttlMs });
  const unsynced = new Set<string>();

  breaker.onChange((open) => {
    if (!open) void writeBackUnsynced();
  });

  /** `call`'s value, or whether it was sent when the store did not answer it. */
  const attempt = <T>(call: () => Promise<T>) =>
    calls.attempt('ownership', async () => answered(await call()), notAnswered);

  function requireFailOpen(): void {
    if (failMode === 'closed') throw storeUnavailable();
  }

  // One write-back at a time. Each pass writes every unsynced id once; an id whose record changed while
  // it was being written (its answer landed meanwhile) stays for the next pass, so the latest record is
  // the one that ends up in the store. A caller arriving meanwhile waits for the running write-back,
  // which covers its id too: were each to run a pass of its own, N answers landing during a recovery
  // would write about N × N records.
  let writingBack: Promise<void> | undefined;
  function writeBackUnsynced(): Promise<void> {
    writingBack ??= writeBackAll().finally(() => {
      writingBack = undefined;
    });
    return writingBack;
  }

  async function writeBackAll(): Promise<void> {
    while (unsynced.size > 0) {
      for (const id of [...unsynced]) {
        const record = fallback.recordOf(id);
        if (record === undefined) {
          unsynced.delete(id);
          continue;
        }
        const value = encodeRecord(record.tenantId, record.response);
        const remainingMs = Math.max(1, record.expiresAtMs - Date.now());
        const written = await attempt(() =>
          writeOne({ requestId: id, value, tenantId: record.tenantId, ttlMs: remainingMs }),
        );
        if (!written.ok) return;
        if (written.value === 0)
          logger.warn(
            {},
            'a request id claimed during a store outage is held by another tenant, or its key holds no record',
          );
        if (fallback.recordOf(id) !== record) continue;
        unsynced.delete(id);
        await fallback.release(id, record.tenantId);
      }
    }
  }

  // A plain GET: WRONGTYPE is Redis answering about this key (see refuseKeyWithoutRecord), not failing.
  const readRecord = (requestId: string): Promise<unknown> =>
    calls.send('get', [ownershipKey(requestId)]).catch((error: unknown) => {
      if (isWrongTypeReply(error)) return KEY_WITHOUT_RECORD;
      throw error;
    });

  const isLocal = (requestId: string) => fallback.recordOf(requestId) !== undefined;

  return {
    async claim(requestId, tenantId) {
      const record = pendingClaimRecord(tenantId);
      const claimed = await attempt(async () => {
        const reply = await calls.run(claimScript, {
          requestId,
          record,
          ttlMs,
          deadline: calls.deadlineArg(),
        });
        return claimReplyOf(reply, clock);
      });
      if (claimed.ok) {
        if (claimed.value === undefined) return { kind: 'claimed' };
        if (typeof claimed.value === 'string') return claimOutcomeOf(decodeRecord(claimed.value), tenantId);
        refuseKeyWithoutRecord(logger, connection, requestId);
        return { kind: 'owned_by_another_tenant' };
      }
      if (claimed.sent)
        undos.add(() => calls.run(undoClaimScript, { requestId, tenantId, record, limits: [] }));
      requireFailOpen();
      const outcome = await fallback.claim(requestId, tenantId);
      if (outcome.kind === 'claimed') unsynced.add(canonicalRequestId(requestId));
      return outcome;
    },

    async complete(requestId, tenantId, response) {
      if (!isLocal(requestId)) {
        const value = encodeRecord(tenantId, response);
        const written = await attempt(() => writeAnswerRecord({ requestId, value, tenantId, ttlMs }));
        if (written.ok) return;
        // Fail-closed: the claim stays pending, so a repeat is refused rather than submitted twice.
        if (failMode === 'closed') return;
        await fallback.claim(requestId, tenantId);
        unsynced.add(canonicalRequestId(requestId));
      }
      await fallback.complete(requestId, tenantId, response);
      if (!breaker.open) await writeBackUnsynced();
    },

    async release(requestId, tenantId) {
      if (isLocal(requestId)) {
        unsynced.delete(canonicalRequestId(requestId));
        await fallback.release(requestId, tenantId);
        return;
      }
      const released = await attempt(() => calls.send('del', [ownershipKey(requestId)]));
      // Sent once the store answers, before anything else: until then the id is refused (409), never
      // handed to someone else; the claim is still this tenant's pending one (nothing else can claim it).
      if (!released.ok) undos.add(() => calls.run(releasePendingScript, { requestId, tenantId }));
    },

    async owns(requestId, tenantId) {
      const found = await attempt(() => readRecord(requestId));
      if (found.ok && found.value !== null) {
        if (typeof found.value === 'string') return decodeRecord(found.value).tenantId === tenantId;
        refuseKeyWithoutRecord(logger, connection, requestId);
        return false;
      }
      // Not in the store: it may be a claim this replica made during an outage, not yet written back.
      if (await fallback.owns(requestId, tenantId)) return true;
      if (found.ok) return false;
      // The store cannot say who owns it: refuse rather than let a tenant read an id it may not own.
      throw storeUnavailable();
    },

    async close() {
      // Answers recorded in the closing turn still reach the store before the connection goes.
      await answerRecords?.drain();
      await fallback.close();
    },
  };
}

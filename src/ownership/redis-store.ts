// store.kind redis: one key per request id, so every replica sees every claim. Each operation is one
// bounded round trip on one key (Cluster-safe), except that on a single Redis the answers recorded in one
// event-loop turn share one call (src/store/batch-per-turn.ts). When the store fails, a circuit breaker
// keeps it off the request path until a probe answers; meanwhile `failMode` decides (see
// docs/ownership.md): `closed` refuses with store_unavailable, `open` claims in a per-replica memory
// store and writes those records back once the store answers. Neither mode ever lets a tenant reach an
// id the gateway cannot tie to it.
import { randomBytes } from 'node:crypto';
import { gatewayError } from '../errors/registry.ts';
import {
  CHARGE_LIMITS_LUA,
  StoreDeadlinePassedError,
  chargeClockArgs,
  isExpiredReply,
  pushChargeInput,
} from '../ratelimit/redis-limiter.ts';
import type { LimitRequest } from '../ratelimit/types.ts';
import {
  STORE_UNAVAILABLE_RETRY_AFTER_SECONDS,
  type StoreBreaker,
  type StoreFailMode,
} from '../store/circuit-breaker.ts';
import type { ObserveStore } from '../store/operations.ts';
import { batchPerTurn } from '../store/batch-per-turn.ts';
import { turnScheduleOf } from '../store/coalesce-writes.ts';
import {
  commandDeadline,
  defineScript,
  isWrongTypeReply,
  type RedisConnection,
  type StoreLogger,
} from '../store/redis.ts';
import type { StoreClock } from '../store/store-clock.ts';
import type { UndoOnRecovery } from '../store/undo-on-recovery.ts';
import { createMemoryOwnershipStore } from './memory-store.ts';
import {
  canonicalRequestId,
  claimOutcomeOf,
  type OwnershipRecord,
  type OwnershipStore,
  type SubmissionResponse,
} from './store.ts';

/** What the scripts answer for an id whose key holds another type than a record's string. */
export const NO_RECORD_REPLY = 'no_record';

// A record is `<tenant>` or `<tenant> ~<token>` while pending, `<tenant> <JSON of the response>` once
// completed; tenant ids never contain a space, so the owner is readable without decoding the rest (in Lua
// too, see src/admission/redis-admission.ts). A claim made in Redis carries a token of its own attempt, so
// that undoing an attempt the gateway gave up on never removes a claim made since (a record written back
// after an outage has none: nothing undoes those).
const OWNER_SEPARATOR = ' ';
const PENDING_TOKEN_MARK = '~';
// Tokens are unique per replica run and attempt: a random tag, then a counter.
const REPLICA_TAG = randomBytes(6).toString('base64url');
let attemptsIssued = 0;

/** The pending record of a new claim attempt by `tenantId`, unique to that attempt. */
export function pendingClaimRecord(tenantId: string): string {
  attemptsIssued += 1;
  return `${tenantId}${OWNER_SEPARATOR}${PENDING_TOKEN_MARK}${REPLICA_TAG}.${attemptsIssued}`;
}

// ARGV[1] the attempt's pending record, ARGV[2] its lifetime (ms), ARGV[3] the deadline (see
// src/store/store-clock.ts). Reply: {'expired', µs} past the deadline, otherwise {this server's µs}
// when this call claimed the id, {µs, existing record} when it did not, and {µs, 'no_record', 1} when
// the key holds something else than a record (see refuseKeyWithoutRecord).
const CLAIM_LUA = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if ARGV[3] ~= '' and now >= tonumber(ARGV[3]) then return {'expired', now} end
-- pcall: a key that is not a string is that id's damage, answered as such, not a failed store call.
local existing = redis.pcall('GET', KEYS[1])
if type(existing) == 'table' then return {now, '${NO_RECORD_REPLY}', 1} end
if existing then return {now, existing} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {now}`;

// Undoes one claim attempt the gateway gave up on, and the charge made with it, only while the id still
// holds that attempt's pending record. KEYS[1] the id's key, then the limits' keys; ARGV[1] the attempt's
// record, then refund_limits' arguments from the second on (TTL margin, 3 per limit). Reply: 1 undone.
const UNDO_CLAIM_LUA = `${CHARGE_LIMITS_LUA}
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
local limit_keys = {}
for i = 2, #KEYS do limit_keys[i - 1] = KEYS[i] end
refund_limits(limit_keys, ARGV)
return 1`;

// A release sent after an outage: deletes the id's record only while it is ARGV[1]'s pending claim (a
// completed record is kept). Reply: 1 deleted.
const RELEASE_PENDING_LUA = `
local record = redis.pcall('GET', KEYS[1])
if type(record) ~= 'string' then return 0 end
if record == ARGV[1] or string.sub(record, 1, #ARGV[1] + 2) == ARGV[1] .. ' ~' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`;

/**
 * Undoes an attempt to claim `requestId` with `record`, and gives back its charge against `limits` when
 * it was made with one (src/admission/redis-admission.ts); a no-op once the id holds anything else.
 */
export type UndoClaim = (
  requestId: string,
  tenantId: string,
  record: string,
  limits: readonly LimitRequest[],
) => Promise<unknown>;

export function defineUndoClaim(connection: RedisConnection): UndoClaim {
  const undoScript = defineScript(connection, 'gengateUndoClaim', UNDO_CLAIM_LUA);
  return (requestId, tenantId, record, limits) => {
    const keys = [ownershipKey(requestId)];
    const args: (string | number)[] = [record, chargeClockArgs(undefined)[1]];
    pushChargeInput(tenantId, limits, keys, args);
    return undoScript(keys.length, keys, args);
  };
}

// Writes records unless another tenant holds their ids: completes claims, or writes back ones made while
// the store was down. KEYS[i] a record's key; ARGV[3i-2] its value, ARGV[3i-1] its tenant, ARGV[3i] its
// lifetime (ms). Reply: per record, 1 written, 0 held by another tenant.
const RECORD_LUA = `
local written = {}
for i = 1, #KEYS do
  -- pcall: a key that is not a string is no record to overwrite, and must not fail the others' writes.
  local existing = redis.pcall('GET', KEYS[i])
  if type(existing) == 'table' or (existing and string.match(existing, '^[^ ]*') ~= ARGV[3 * i - 1]) then
    written[i] = 0
  else
    redis.call('SET', KEYS[i], ARGV[3 * i - 2], 'PX', ARGV[3 * i])
    written[i] = 1
  end
end
return written`;

interface RecordWrite {
  requestId: string;
  value: string;
  tenantId: string;
  ttlMs: number;
}

/** 1 when the record was written, 0 when another tenant holds its id. */
type Written = 0 | 1;

function writtenOf(reply: unknown, count: number): Written[] {
  if (!Array.isArray(reply) || reply.length !== count || !reply.every((one) => one === 0 || one === 1)) {
    throw new Error('unexpected record script reply');
  }
  return reply as Written[];
}

export interface RedisOwnershipStoreOptions {
  connection: RedisConnection;
  /** The connection's breaker, shared with the other users of the connection. */
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  failMode: StoreFailMode;
  ttlMs: number;
  logger: StoreLogger;
  observeStore?: ObserveStore;
  /** The store's clock as replies show it (claims carry deadlines in it). */
  clock: StoreClock;
  /** Where claims given up on and releases that could not be sent wait for the store. */
  undos: UndoOnRecovery;
  undoClaim: UndoClaim;
}

export function ownershipKey(requestId: string): string {
  return `request:${canonicalRequestId(requestId)}`;
}

function encodeRecord(tenantId: string, response: SubmissionResponse | undefined): string {
  if (response === undefined) return tenantId;
  const stored = {
    status: response.status,
    contentType: response.contentType,
    body: response.body.toString('base64'),
  };
  return `${tenantId}${OWNER_SEPARATOR}${JSON.stringify(stored)}`;
}

function decodeResponse(text: string): SubmissionResponse | undefined {
  try {
    const stored = JSON.parse(text) as { status?: unknown; contentType?: unknown; body?: unknown };
    if (typeof stored.status !== 'number' || typeof stored.body !== 'string') return undefined;
    return {
      status: stored.status,
      contentType: typeof stored.contentType === 'string' ? stored.contentType : undefined,
      body: Buffer.from(stored.body, 'base64'),
    };
  } catch {
    // A damaged response still names its owner: it reads as pending, which refuses safely.
    return undefined;
  }
}

/** A stored record, as read from the store. */
export function decodeRecord(value: string): OwnershipRecord {
  const separator = value.indexOf(OWNER_SEPARATOR);
  if (separator < 0) return { tenantId: value, response: undefined };
  return { tenantId: value.slice(0, separator), response: decodeResponse(value.slice(separator + 1)) };
}

/**
 * An id whose key holds another type than a record's string: written by something else than gengate
 * sharing the key space, or damaged. The store answered, so this is that id's fault alone: its request
 * is refused as if another tenant held the id (409 on a create, 404 on a read or cancel: the client can
 * go on at once with another id), and the breaker, which every tenant shares, stays closed. Overwriting
 * the key could destroy what its writer keeps there; the operator is told which key to look at.
 */
export function refuseKeyWithoutRecord(
  logger: StoreLogger,
  connection: RedisConnection,
  requestId: string,
): void {
  logger.warn(
    { requestId, key: `${connection.options.keyPrefix ?? ''}${ownershipKey(requestId)}` },
    "a request id's key holds no record (another type); the id is refused as taken",
  );
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

/** `sent`: the call reached the connection, so the store may have run it (or may still run it). */
type Attempt<T> = { ok: true; value: T } | { ok: false; sent: boolean };

export function createRedisOwnershipStore(options: RedisOwnershipStoreOptions): OwnershipStore {
  const { connection, breaker, commandTimeoutMs, failMode, ttlMs, logger, clock, undos } = options;
  const bounded = commandDeadline(connection, commandTimeoutMs);
  const claimScript = defineScript(connection, 'gengateClaimRequestId', CLAIM_LUA);
  const releasePendingScript = defineScript(connection, 'gengateReleasePending', RELEASE_PENDING_LUA);
  const recordScript = defineScript(connection, 'gengateRecordRequestIds', RECORD_LUA);
  const writeRecords = async (records: readonly RecordWrite[]): Promise<Written[]> => {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const record of records) {
      keys.push(ownershipKey(record.requestId));
      args.push(record.value, record.tenantId, record.ttlMs);
    }
    return writtenOf(await recordScript(keys.length, keys, args), records.length);
  };
  const writeOne = async (record: RecordWrite): Promise<Written> =>
    (await writeRecords([record]))[0] as Written;
  // The answers landing in one turn are recorded in one call, sent before any later command so that
  // whatever reads the id next sees the answer (src/store/coalesce-writes.ts). A Cluster spreads request
  // ids over its slots, and one script may only touch one slot, so there each record goes alone.
  const turn = turnScheduleOf(connection);
  const answerRecords = turn === undefined ? undefined : batchPerTurn(writeRecords, turn.beforeNextCommand);
  const writeAnswerRecord = answerRecords === undefined ? writeOne : answerRecords.add;
  // Fail-open only: claims made while the store was down, and the ids still to write back to it.
  const fallback = createMemoryOwnershipStore({ ttlMs });
  const unsynced = new Set<string>();

  breaker.onChange((open) => {
    if (open) logger.warn({ failMode }, 'ownership store failing; bypassing it until it answers');
    else {
      logger.info({}, 'ownership store answering again');
      void writeBackUnsynced();
    }
  });

  async function attempt<T>(run: () => Promise<T>): Promise<Attempt<T>> {
    if (breaker.open) return { ok: false, sent: false };
    const started = performance.now();
    try {
      const value = await bounded(run());
      options.observeStore?.('ownership', (performance.now() - started) / 1000, false);
      return { ok: true, value };
    } catch (error) {
      options.observeStore?.('ownership', (performance.now() - started) / 1000, true);
      if (breaker.trip()) {
        logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'ownership store call failed',
        );
      }
      return { ok: false, sent: true };
    }
  }

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
  const readRecord = (requestId: string): Promise<string | null | typeof KEY_WITHOUT_RECORD> =>
    connection.get(ownershipKey(requestId)).catch((error: unknown) => {
      if (isWrongTypeReply(error)) return KEY_WITHOUT_RECORD;
      throw error;
    });

  const isLocal = (requestId: string) => fallback.recordOf(requestId) !== undefined;

  return {
    async claim(requestId, tenantId) {
      const record = pendingClaimRecord(tenantId);
      const claimed = await attempt(async () => {
        const reply = await claimScript(
          1,
          ownershipKey(requestId),
          record,
          ttlMs,
          clock.deadlineArg(commandTimeoutMs),
        );
        if (isExpiredReply(reply, clock)) throw new StoreDeadlinePassedError();
        return claimReplyOf(reply, clock);
      });
      if (claimed.ok) {
        if (claimed.value === undefined) return { kind: 'claimed' };
        if (typeof claimed.value === 'string') return claimOutcomeOf(decodeRecord(claimed.value), tenantId);
        refuseKeyWithoutRecord(logger, connection, requestId);
        return { kind: 'owned_by_another_tenant' };
      }
      if (claimed.sent) undos.add(() => options.undoClaim(requestId, tenantId, record, []));
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
      const released = await attempt(() => connection.del(ownershipKey(requestId)));
      // Sent once the store answers, before anything else: until then the id is refused (409), never
      // handed to someone else; the claim is still this tenant's pending one (nothing else can claim it).
      if (!released.ok) {
        undos.add(() => releasePendingScript(1, ownershipKey(requestId), tenantId));
      }
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

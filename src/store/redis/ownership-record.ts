// How a request id's ownership record is written in Redis, read back, and answered for a key that holds
// none; the ownership store and the admission script share it.
import { randomBytes } from 'node:crypto';
import type { OwnershipRecord, SubmissionResponse } from '../../ownership/store.ts';
import type { RedisConnection, StoreLogger } from './connection.ts';
import { ownershipKey } from './keys.ts';

/** What the scripts answer for an id whose key holds another type than a record's string. */
export const NO_RECORD_REPLY = 'no_record';

// A record is `<tenant>` or `<tenant> ~<token>` while pending, `<tenant> <JSON of the response>` once
// completed; tenant ids never contain a space, so the owner is readable without decoding the rest (in Lua
// too, see admission.ts). A claim made in Redis carries a token of its own attempt, so that undoing an
// attempt the gateway gave up on never removes a claim made since (a record written back after an outage
// has none: nothing undoes those).
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

/** A record as stored: its owner, and the response once the claim is completed. */
export function encodeRecord(tenantId: string, response: SubmissionResponse | undefined): string {
  if (response === undefined) return tenantId;
  const stored = {
    status: response.status,
    contentType: response.contentType,
    body: response.body.toString('base64'),
    ...(response.fingerprint === undefined ? {} : { fingerprint: response.fingerprint }),
  };
  return `${tenantId}${OWNER_SEPARATOR}${JSON.stringify(stored)}`;
}

function decodeResponse(text: string): SubmissionResponse | undefined {
  try {
    const stored = JSON.parse(text) as {
      status?: unknown;
      contentType?: unknown;
      body?: unknown;
      fingerprint?: unknown;
    };
    if (typeof stored.status !== 'number' || typeof stored.body !== 'string') return undefined;
    return {
      status: stored.status,
      contentType: typeof stored.contentType === 'string' ? stored.contentType : undefined,
      body: Buffer.from(stored.body, 'base64'),
      fingerprint: typeof stored.fingerprint === 'string' ? stored.fingerprint : undefined,
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

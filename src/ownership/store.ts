// Who owns each request id (docs/ownership.md): the tenant that first submitted it, and, once the
// upstream accepted it, the submission response to replay to that tenant's repeats.

/** The upstream's 2xx answer to a create, kept byte for byte. */
export interface SubmissionResponse {
  status: number;
  contentType: string | undefined;
  body: Buffer;
}

export type ClaimOutcome =
  /** The id was free: the caller owns it now and must complete or release the claim. */
  | { kind: 'claimed' }
  | { kind: 'owned_by_another_tenant' }
  /** The caller owns it, but no response is stored: still in flight, or its outcome is unknown. */
  | { kind: 'pending' }
  | { kind: 'replay'; response: SubmissionResponse };

export interface OwnershipStore {
  /** Atomically claims `requestId` for `tenantId`, or says who has it. */
  claim(requestId: string, tenantId: string): Promise<ClaimOutcome>;
  /** Stores the accepted submission on the caller's claim (and renews its lifetime). */
  complete(requestId: string, tenantId: string, response: SubmissionResponse): Promise<void>;
  /** Gives up `tenantId`'s claim whose submission certainly did not happen, so the id can be used again. */
  release(requestId: string, tenantId: string): Promise<void>;
  /** Whether `tenantId` owns `requestId`; false for unknown ids and for another tenant's. */
  owns(requestId: string, tenantId: string): Promise<boolean>;
  close(): Promise<void>;
}

/** One id's record, as both stores keep it. */
export interface OwnershipRecord {
  tenantId: string;
  response: SubmissionResponse | undefined;
}

/** Why an id that already has a record cannot be claimed by `tenantId`. */
export type TakenOutcome = Exclude<ClaimOutcome, { kind: 'claimed' }>;

export function claimOutcomeOf(record: OwnershipRecord, tenantId: string): TakenOutcome {
  if (record.tenantId !== tenantId) return { kind: 'owned_by_another_tenant' };
  return record.response === undefined ? { kind: 'pending' } : { kind: 'replay', response: record.response };
}

/** The service treats request ids case-insensitively, so one id has one owner whatever its spelling. */
export function canonicalRequestId(requestId: string): string {
  return requestId.toLowerCase();
}

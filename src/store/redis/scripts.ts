// The store's Lua scripts, one way: each is a file of scripts/ named with its key count (`claim-1.lua`;
// `-n` when the call gives them), KEYS and ARGV documented at its top, the shared Lua of scripts/includes/
// put in place of its `--- @include "name"` lines once, when this module loads. Each is defined on the
// connection as an ioredis command (EVALSHA, EVAL once per socket and after a NOSCRIPT, which means the
// script did not run), and its KEYS and ARGV are built by the one typed function beside it here.
import { readFileSync } from 'node:fs';
import { decide } from '../../ratelimit/decision.ts';
import { STATE_TTL_MARGIN_MS, type LimitVerdict } from '../../ratelimit/gcra.ts';
import type { LimitRequest, RateDecision } from '../../ratelimit/types.ts';
import type { RedisConnection } from './connection.ts';
import type { JobReservation, Settlement, UnreservedJob } from '../../jobs/book.ts';
import { canonicalRequestId } from '../../ownership/store.ts';
import {
  JOB_RECORDS_KEY,
  JOBS_ADMITTED_KEY,
  JOBS_DUE_KEY,
  adoptedJobKey,
  costCountedKey,
  credentialJobsKey,
  credentialPollsKey,
  ownershipKey,
  rateLimitKey,
  tenantJobsKey,
  usageKey,
} from './keys.ts';

export type ScriptArg = string | number;
interface ScriptCall {
  keys: string[];
  argv: ScriptArg[];
}

export interface StoreScript<Input> {
  /** The command ioredis defines for it. */
  readonly command: string;
  readonly lua: string;
  /** Fixed by its file name, or undefined when each call gives it (`-n`). */
  readonly numberOfKeys: number | undefined;
  readonly build: (input: Input) => ScriptCall;
}

const SCRIPTS_FOLDER = new URL('scripts/', import.meta.url);
const INCLUDE_LINE = /^--- @include "([\w-]+)"$/gm;
const FILE_NAME = /^(\w+)-(\d+|n)\.lua$/;
/** Every script of this module, as defined below: defineScripts() defines them all. */
const SCRIPTS: StoreScript<never>[] = [];

function script<Input>(file: string, build: (input: Input) => ScriptCall): StoreScript<Input> {
  const [, name, keyCount] = FILE_NAME.exec(file) ?? [];
  if (name === undefined || keyCount === undefined) throw new Error(`script file ${file} names no key count`);
  const lua = readFileSync(new URL(file, SCRIPTS_FOLDER), 'utf8').replace(INCLUDE_LINE, (_line, include) =>
    readFileSync(new URL(`includes/${String(include)}.lua`, SCRIPTS_FOLDER), 'utf8'),
  );
  const numberOfKeys = keyCount === 'n' ? undefined : Number(keyCount);
  const defined = { command: `gengate_${name}`, lua, numberOfKeys, build };
  SCRIPTS.push(defined);
  return defined;
}

/** The arguments of the scripts' command: KEYS then ARGV, led by the key count when the file has `-n`. */
export function commandArgs<Input>(definition: StoreScript<Input>, input: Input): ScriptArg[] {
  const { keys, argv } = definition.build(input);
  if (definition.numberOfKeys === undefined) return [keys.length, ...keys, ...argv];
  return [...keys, ...argv];
}

const TTL_MARGIN_ARG = String(STATE_TTL_MARGIN_MS);

/** One tenant's limits as gcra.lua's read_limits takes them, appended to `keys` and `argv`. */
function pushLimits(
  tenantId: string,
  limits: readonly LimitRequest[],
  keys: string[],
  argv: ScriptArg[],
): void {
  for (const request of limits) {
    keys.push(rateLimitKey(tenantId, request.id));
    argv.push(request.limit, request.windowSeconds, request.cost);
  }
}

/** "now" for charge_limits: '' (this server's TIME) unless a test clock gives it. */
export function scriptClockArg(scriptClock: (() => number) | undefined): string {
  return scriptClock === undefined ? '' : String(scriptClock());
}

export const chargeLimitsScript = script(
  'chargeLimits-n.lua',
  (input: { clock: string; deadline: string; tenantId: string; limits: readonly LimitRequest[] }) => {
    const keys: string[] = [];
    const argv: ScriptArg[] = [input.clock, TTL_MARGIN_ARG, input.deadline];
    pushLimits(input.tenantId, input.limits, keys, argv);
    return { keys, argv };
  },
);

export interface AdmissionCall {
  requestId: string;
  intent: 'claim' | 'own';
  tenantId: string;
  /** The pending record a claim writes; '' for `own`. */
  claimRecord: string;
  limits: readonly LimitRequest[];
  /** A create's job reservation, taken with the claim (claims only). */
  reservation: JobReservation | undefined;
}

const optionalArg = (value: number | undefined): ScriptArg => (value === undefined ? '' : value);

/** The keys of a reservation (jobs.lua reservation_keys), appended to `keys`. */
function pushReservationKeys(tenantId: string, reservation: JobReservation, keys: string[]): void {
  keys.push(
    tenantJobsKey(tenantId),
    credentialJobsKey(reservation.credential),
    JOB_RECORDS_KEY,
    JOBS_DUE_KEY,
    JOBS_ADMITTED_KEY,
  );
}

/** A reservation's values (jobs.lua read_reservation), appended to `argv`. */
function pushReservation(
  requestId: string,
  reservation: JobReservation,
  answerWaitMs: number,
  argv: ScriptArg[],
): void {
  argv.push(
    reservation.costMicroUsd,
    optionalArg(reservation.dailyMicroUsd),
    optionalArg(reservation.monthlyMicroUsd),
    optionalArg(reservation.tenantMaxInFlight),
    optionalArg(reservation.credentialMaxInFlight),
    reservation.route,
    reservation.credential,
    answerWaitMs,
    canonicalRequestId(requestId),
  );
}

export const admitScript = script(
  'admit-n.lua',
  (input: {
    clock: string;
    claimTtlMs: number;
    deadline: string;
    calls: readonly AdmissionCall[];
    answerWaitMs: number;
  }) => {
    const keys: string[] = [];
    const argv: ScriptArg[] = [
      input.calls.length,
      input.clock,
      TTL_MARGIN_ARG,
      input.claimTtlMs,
      input.deadline,
    ];
    for (const call of input.calls) {
      keys.push(ownershipKey(call.requestId));
      argv.push(
        call.limits.length,
        call.intent,
        call.tenantId,
        call.claimRecord,
        call.reservation === undefined ? 0 : 1,
      );
      pushLimits(call.tenantId, call.limits, keys, argv);
      if (call.reservation !== undefined) {
        pushReservationKeys(call.tenantId, call.reservation, keys);
        pushReservation(call.requestId, call.reservation, input.answerWaitMs, argv);
      }
    }
    return { keys, argv };
  },
);

export const undoClaimScript = script(
  'undoClaim-n.lua',
  (input: { requestId: string; tenantId: string; record: string; limits: readonly LimitRequest[] }) => {
    const keys = [ownershipKey(input.requestId)];
    const argv: ScriptArg[] = [input.record, TTL_MARGIN_ARG];
    pushLimits(input.tenantId, input.limits, keys, argv);
    return { keys, argv };
  },
);

export const claimScript = script(
  'claim-1.lua',
  (input: { requestId: string; record: string; ttlMs: number; deadline: string }) => ({
    keys: [ownershipKey(input.requestId)],
    argv: [input.record, input.ttlMs, input.deadline],
  }),
);

export const releasePendingScript = script(
  'releasePending-1.lua',
  (input: { requestId: string; tenantId: string }) => ({
    keys: [ownershipKey(input.requestId)],
    argv: [input.tenantId],
  }),
);

export interface RecordWrite {
  requestId: string;
  value: string;
  tenantId: string;
  ttlMs: number;
}

export const recordRequestIdsScript = script('recordRequestIds-n.lua', (records: readonly RecordWrite[]) => {
  const keys: string[] = [];
  const argv: ScriptArg[] = [];
  for (const record of records) {
    keys.push(ownershipKey(record.requestId));
    argv.push(record.value, record.tenantId, record.ttlMs);
  }
  return { keys, argv };
});

export const countCostOnceScript = script(
  'countCostOnce-3.lua',
  (input: {
    tenantId: string;
    requestId: string;
    month: string;
    costMicroUsd: number;
    markTtlSeconds: number;
    usageTtlSeconds: number;
  }) => ({
    keys: [
      costCountedKey(input.tenantId, input.requestId),
      usageKey(input.tenantId, input.month),
      usageKey(input.tenantId, 'lifetime'),
    ],
    argv: [input.costMicroUsd, input.markTtlSeconds, input.usageTtlSeconds],
  }),
);

export const reserveJobScript = script(
  'reserveJob-5.lua',
  (input: { tenantId: string; requestId: string; reservation: JobReservation; answerWaitMs: number }) => {
    const keys: string[] = [];
    const argv: ScriptArg[] = [input.tenantId];
    pushReservationKeys(input.tenantId, input.reservation, keys);
    pushReservation(input.requestId, input.reservation, input.answerWaitMs, argv);
    return { keys, argv };
  },
);

export const adoptJobsScript = script(
  'adoptJobs-n.lua',
  (input: {
    jobs: readonly { job: UnreservedJob; notAfterMs: number | undefined }[];
    answerWaitMs: number;
    markTtlMs: number;
  }) => {
    const keys: string[] = [JOB_RECORDS_KEY, JOBS_DUE_KEY, JOBS_ADMITTED_KEY];
    // The first poll's delay is the same for every job of a configuration.
    const argv: ScriptArg[] = [input.jobs.length, input.jobs[0]?.job.firstPollMs ?? 0, input.markTtlMs];
    for (const { job, notAfterMs } of input.jobs) {
      keys.push(
        tenantJobsKey(job.tenantId),
        credentialJobsKey(job.credential),
        adoptedJobKey(canonicalRequestId(job.requestId)),
      );
      // No budget and no cap: the job runs already, its reservation only records it.
      const reservation = {
        ...job.reservation,
        dailyMicroUsd: undefined,
        monthlyMicroUsd: undefined,
        tenantMaxInFlight: undefined,
        credentialMaxInFlight: undefined,
      };
      pushReservation(job.requestId, reservation, input.answerWaitMs, argv);
      argv.push(job.tenantId, job.admittedAtMs, job.answer, optionalArg(notAfterMs));
    }
    return { keys, argv };
  },
);

/** A job whose create the upstream accepted, first polled `firstPollMs` from now. */
export interface JobSubmission {
  requestId: string;
  firstPollMs: number;
}

export const submitJobsScript = script('submitJobs-2.lua', (jobs: readonly JobSubmission[]) => ({
  keys: [JOB_RECORDS_KEY, JOBS_DUE_KEY],
  argv: jobs.flatMap((job) => [canonicalRequestId(job.requestId), job.firstPollMs]),
}));

export const settleJobScript = script(
  'settleJob-5.lua',
  (input: {
    requestId: string;
    tenantId: string;
    credential: string;
    settlement: Settlement;
    tellWithinMs: number;
  }) => {
    const { settlement } = input;
    return {
      keys: [
        JOB_RECORDS_KEY,
        JOBS_DUE_KEY,
        JOBS_ADMITTED_KEY,
        tenantJobsKey(input.tenantId),
        credentialJobsKey(input.credential),
      ],
      argv: [
        canonicalRequestId(input.requestId),
        input.tenantId,
        input.credential,
        settlement.outcome,
        settlement.outcome === 'completed' ? settlement.reportedMicroUsd : 0,
        'record' in settlement ? settlement.record : '',
        input.tellWithinMs,
      ],
    };
  },
);

export const toldJobScript = script('toldJob-3.lua', (requestId: string) => ({
  keys: [JOB_RECORDS_KEY, JOBS_DUE_KEY, JOBS_ADMITTED_KEY],
  argv: [canonicalRequestId(requestId)],
}));

export const rescheduleJobScript = script(
  'rescheduleJob-2.lua',
  (input: { requestId: string; delayMs: number; polls: number }) => ({
    keys: [JOB_RECORDS_KEY, JOBS_DUE_KEY],
    argv: [canonicalRequestId(input.requestId), input.delayMs, input.polls],
  }),
);

export const leaseJobsScript = script(
  'leaseJobs-n.lua',
  (input: {
    count: number;
    leaseMs: number;
    pollsPerSecond: number;
    maxAgeMs: number;
    credentials: readonly string[];
  }) => ({
    keys: [JOB_RECORDS_KEY, JOBS_DUE_KEY, ...input.credentials.map(credentialPollsKey)],
    argv: [
      input.count,
      input.leaseMs,
      input.pollsPerSecond,
      input.maxAgeMs,
      TTL_MARGIN_ARG,
      ...input.credentials,
    ],
  }),
);

export const jobsUsageScript = script('jobsUsage-1.lua', (tenantId: string) => ({
  keys: [tenantJobsKey(tenantId)],
  argv: [],
}));

/** Defines every script as a command of `connection` (once per connection). */
export function defineScripts(connection: RedisConnection): void {
  for (const { command, lua, numberOfKeys } of SCRIPTS) {
    connection.defineCommand(command, numberOfKeys === undefined ? { lua } : { lua, numberOfKeys });
  }
}

/**
 * The decision in a reply of charge_limits (gcra.lua) for `limits`, asked in that order: its "now",
 * whether it charged, then each limit's remaining units, full-at and wait µs.
 */
export function decisionFromReply(reply: unknown, limits: readonly LimitRequest[]): RateDecision {
  if (
    !Array.isArray(reply) ||
    reply.length !== 2 + 3 * limits.length ||
    !reply.every((value) => typeof value === 'number')
  ) {
    throw new Error('unexpected rate-limit script reply');
  }
  const values: number[] = reply;
  const verdicts: LimitVerdict[] = limits.map((_limit, index) => ({
    remaining: values[2 + 3 * index] as number,
    fullAtMicros: values[3 + 3 * index] as number,
    waitMicros: values[4 + 3 * index] as number,
  }));
  return decide(limits, values[0] as number, values[1] === 1, verdicts, true);
}

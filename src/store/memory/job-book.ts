// Jobs in this process (src/jobs/book.ts), for one replica: the same records, periods and settlement
// rules as the Redis scripts (src/store/redis/scripts/includes/jobs.lua), each step synchronous, so
// nothing comes between a check and its write.
import type { JobBook, JobReservation, ReservationRefusal, TrackedJob } from '../../jobs/book.ts';
import { budgetPeriods } from '../../jobs/calendar.ts';
import { settledJobOf, trackedJobOf, type StoredJob } from '../../jobs/stored-job.ts';
import { canonicalRequestId } from '../../ownership/store.ts';
import { createDueTimes } from './due-times.ts';

export interface MemoryJobBookOptions {
  answerWaitMs: number;
  leaseMs: number;
  maxAgeMs: number;
  now?: () => number;
}

const ONE_SECOND_MS = 1_000;
// A lease looks at this many times the jobs it may lease, earliest due first: some may have to wait for
// their credential's polls (as in leaseJobs-n.lua).
const CANDIDATES_PER_LEASED_JOB = 4;

export function createMemoryJobBook(options: MemoryJobBookOptions): JobBook {
  const now = options.now ?? Date.now;
  /** Per tenant: `inflight` and `<period>:reserved` / `<period>:spent`, µUSD. */
  const tenants = new Map<string, Map<string, number>>();
  const credentials = new Map<string, number>();
  /** In the order of their admission: the first is the oldest. */
  const records = new Map<string, StoredJob>();
  const due = createDueTimes();
  const pollTimes = new Map<string, number[]>();

  const fieldsOf = (tenantId: string) => {
    let fields = tenants.get(tenantId);
    if (fields === undefined) {
      fields = new Map();
      tenants.set(tenantId, fields);
    }
    return fields;
  };
  const add = (fields: Map<string, number>, field: string, delta: number) => {
    fields.set(field, (fields.get(field) ?? 0) + delta);
  };

  function refusal(tenantId: string, r: JobReservation, at: number): ReservationRefusal | undefined {
    const fields = fieldsOf(tenantId);
    const periods = budgetPeriods(at);
    // The month first: when both are spent, the refusal names the one whose reset admits the create again.
    const scopes = [
      ['monthly', r.monthlyMicroUsd, periods.month, periods.monthEndMs],
      ['daily', r.dailyMicroUsd, periods.day, periods.dayEndMs],
    ] as const;
    for (const [scope, limit, period, endMs] of scopes) {
      if (limit === undefined) continue;
      const used = (fields.get(`${period}:reserved`) ?? 0) + (fields.get(`${period}:spent`) ?? 0);
      if (used + r.costMicroUsd > limit) {
        return {
          kind: 'budget_exceeded',
          scope,
          remainingMicroUsd: Math.max(limit - used, 0),
          resetsAtMs: endMs,
        };
      }
    }
    if (r.tenantMaxInFlight !== undefined && (fields.get('inflight') ?? 0) >= r.tenantMaxInFlight) {
      return { kind: 'too_many_jobs_in_flight', scope: 'tenant', limit: r.tenantMaxInFlight };
    }
    const credentialCount = credentials.get(r.credential) ?? 0;
    if (r.credentialMaxInFlight !== undefined && credentialCount >= r.credentialMaxInFlight) {
      return { kind: 'too_many_jobs_in_flight', scope: 'credential', limit: r.credentialMaxInFlight };
    }
    return undefined;
  }

  /** Whether `credential` may be polled once more now (at most `perSecond` in any second). */
  function takePoll(credential: string, perSecond: number, at: number): boolean {
    const times = (pollTimes.get(credential) ?? []).filter((time) => time > at - ONE_SECOND_MS);
    pollTimes.set(credential, times);
    if (times.length >= perSecond) return false;
    times.push(at);
    return true;
  }

  return {
    async reserve(tenantId, requestId, reservation) {
      const at = now();
      const refused = refusal(tenantId, reservation, at);
      if (refused !== undefined) return refused;
      const fields = fieldsOf(tenantId);
      const { day, month } = budgetPeriods(at);
      add(fields, `${day}:reserved`, reservation.costMicroUsd);
      add(fields, `${month}:reserved`, reservation.costMicroUsd);
      add(fields, 'inflight', 1);
      credentials.set(reservation.credential, (credentials.get(reservation.credential) ?? 0) + 1);
      const id = canonicalRequestId(requestId);
      // An id reserved again (its claim expired before its job ended) moves to the end: the first record
      // stays the oldest, as backlog() reads it.
      records.delete(id);
      records.set(id, {
        tenant: tenantId,
        route: reservation.route,
        credential: reservation.credential,
        cost: reservation.costMicroUsd,
        day,
        month,
        admittedAt: at,
        state: 'reserved',
        polls: 0,
      });
      due.set(id, at + options.answerWaitMs);
      return 'reserved';
    },
    // Always answers: no create is admitted without its reservation.
    adopt() {},
    async submitted(requestId, firstPollMs) {
      const id = canonicalRequestId(requestId);
      const job = records.get(id);
      if (job?.state !== 'reserved') return;
      job.state = 'submitted';
      due.set(id, now() + firstPollMs);
    },
    async settle(identity, settlement) {
      const id = canonicalRequestId(identity.requestId);
      const job = records.get(id);
      if (job === undefined || job.state === 'ended') return undefined;
      const fields = fieldsOf(job.tenant);
      const spent =
        settlement.outcome === 'completed'
          ? settlement.reportedMicroUsd
          : settlement.outcome === 'expired'
            ? job.cost
            : 0;
      for (const period of [job.day, job.month]) {
        add(fields, `${period}:reserved`, -job.cost);
        add(fields, `${period}:spent`, spent);
      }
      add(fields, 'inflight', -1);
      credentials.set(job.credential, (credentials.get(job.credential) ?? 0) - 1);
      if (settlement.outcome === 'refused') {
        records.delete(id);
        due.delete(id);
        return undefined;
      }
      const at = now();
      Object.assign(job, { state: 'ended', outcome: settlement.outcome, endedAt: at });
      if ('record' in settlement) job.record = settlement.record;
      due.set(id, at + options.leaseMs);
      return settledJobOf(id, job, spent);
    },
    async told(requestId) {
      const id = canonicalRequestId(requestId);
      if (records.get(id)?.state !== 'ended') return;
      records.delete(id);
      due.delete(id);
    },
    async leaseDue(count, leaseMs, pollsPerSecond) {
      const at = now();
      const leased: TrackedJob[] = [];
      for (const { id, dueAt } of due.takeDue(at, count * CANDIDATES_PER_LEASED_JOB)) {
        const job = records.get(id);
        if (job === undefined) continue;
        const needsPoll = job.state !== 'ended' && at - job.admittedAt < options.maxAgeMs;
        if (leased.length >= count || (needsPoll && !takePoll(job.credential, pollsPerSecond, at))) {
          due.set(id, dueAt);
          continue;
        }
        due.set(id, at + leaseMs);
        leased.push(trackedJobOf(id, job));
      }
      return leased;
    },
    async reschedule(requestId, delayMs, polls) {
      const id = canonicalRequestId(requestId);
      const job = records.get(id);
      if (job === undefined || job.state === 'ended') return;
      job.polls = polls;
      due.set(id, now() + delayMs);
    },
    async usage(tenantId, daily, monthly) {
      const fields = fieldsOf(tenantId);
      const periods = budgetPeriods(now());
      const period = (limit: number | undefined, name: string, endMs: number) =>
        limit === undefined
          ? undefined
          : {
              limitMicroUsd: limit,
              reservedMicroUsd: fields.get(`${name}:reserved`) ?? 0,
              spentMicroUsd: fields.get(`${name}:spent`) ?? 0,
              resetsAtMs: endMs,
            };
      return {
        daily: period(daily, periods.day, periods.dayEndMs),
        monthly: period(monthly, periods.month, periods.monthEndMs),
        jobsInFlight: fields.get('inflight') ?? 0,
      };
    },
    async credentialJobsInFlight(credential) {
      return credentials.get(credential) ?? 0;
    },
    async backlog() {
      const oldest = records.values().next();
      return {
        count: records.size,
        oldestAdmittedAtMs: oldest.done === true ? undefined : oldest.value.admittedAt,
      };
    },
  };
}

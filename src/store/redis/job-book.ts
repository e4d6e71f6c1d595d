// Jobs on Redis (src/jobs/book.ts): every step one script of scripts/ (reservation, submission,
// settlement, leases), so each is atomic and replicas never disagree; the admission script reserves with
// the limits in the one round trip a create waits for (admission.ts), and the jobs whose creates were
// answered in one turn are marked submitted in one call (send-per-turn.ts). A call the store cannot answer
// follows failMode through the one wrapper (store-calls.ts): a reservation is then not taken (the job is
// adopted once the store answers: adopt-unreserved.ts), and the tracker's own calls are retried at its
// next turn.
import type { JobBook, JobsUsage, ReservationRefusal } from '../../jobs/book.ts';
import { parseStoredJob, settledJobOf, trackedJobOf } from '../../jobs/stored-job.ts';
import { createAdoptUnreserved } from './adopt-unreserved.ts';
import { JOBS_ADMITTED_KEY, JOBS_DUE_KEY, credentialJobsKey } from './keys.ts';
import {
  jobsUsageScript,
  leaseJobsScript,
  rescheduleJobScript,
  reserveJobScript,
  settleJobScript,
  submitJobsScript,
  toldJobScript,
  type JobSubmission,
} from './scripts.ts';
import { batchPerTurn } from './send-per-turn.ts';
import type { StoreCalls } from './store-calls.ts';

export interface RedisJobBookOptions {
  /** How long a reserved job waits for its create's answer before the tracker asks the upstream. */
  answerWaitMs: number;
  /** How long the replica that settles a job has to tell its listeners before another one does. */
  leaseMs: number;
  /** Age past which a job is expired, ms (the lease script needs no poll for those). */
  maxAgeMs: number;
  /** Every configured credential: the poll rate of each is kept in the store. */
  credentials: () => readonly string[];
}

const unexpected = () => new Error('unexpected job script reply');

/** reservation_refusal's reply (jobs.lua). */
export function refusalOfReply(reply: unknown): ReservationRefusal {
  if (!Array.isArray(reply)) throw unexpected();
  const [kind, scope, first, second] = reply as [unknown, unknown, unknown, unknown];
  if (kind === 'budget_exceeded' && (scope === 'daily' || scope === 'monthly')) {
    return { kind, scope, remainingMicroUsd: Number(first), resetsAtMs: Number(second) };
  }
  if (kind === 'too_many_jobs_in_flight' && (scope === 'tenant' || scope === 'credential')) {
    return { kind, scope, limit: Number(first) };
  }
  throw unexpected();
}

export function createRedisJobBook(
  calls: StoreCalls,
  options: RedisJobBookOptions,
): JobBook & { drain(): Promise<void> } {
  const unanswered = () => undefined;
  const adopt = createAdoptUnreserved(calls, options);
  const submit = async (submissions: readonly JobSubmission[]): Promise<unknown[]> => {
    const reply = await calls.run(submitJobsScript, submissions);
    if (!Array.isArray(reply)) throw unexpected();
    return reply as unknown[];
  };
  // A Cluster sends each command at once (no turn to batch in): there each submission goes alone.
  const submissions =
    calls.turn === undefined ? undefined : batchPerTurn(submit, calls.turn.beforeNextCommand);
  const book: JobBook & { drain(): Promise<void> } = {
    async reserve(tenantId, requestId, reservation) {
      return calls.attempt(
        'jobs',
        async () => {
          const reply = await calls.run(reserveJobScript, {
            tenantId,
            requestId,
            reservation,
            answerWaitMs: options.answerWaitMs,
          });
          return Array.isArray(reply) && reply[0] === 'reserved' ? 'reserved' : refusalOfReply(reply);
        },
        (sent) => (sent ? ('maybe_taken' as const) : ('not_sent' as const)),
      );
    },
    adopt,
    async submitted(requestId, firstPollMs) {
      const submission = { requestId, firstPollMs };
      await calls.attempt(
        'jobs',
        () => (submissions === undefined ? submit([submission]) : submissions.add(submission)),
        unanswered,
      );
    },
    async settle(job, settlement) {
      const reply = await calls.attempt(
        'jobs',
        () =>
          calls.run(settleJobScript, {
            requestId: job.requestId,
            tenantId: job.tenantId,
            credential: job.credential,
            settlement,
            tellWithinMs: options.leaseMs,
          }),
        unanswered,
      );
      if (!Array.isArray(reply)) return undefined;
      const [kind, tenantId, credential] = reply as [unknown, unknown, unknown];
      // The job is another tenant's or credential's than the caller thought (a reload moved it): its own.
      if (kind === 'mismatch' && typeof tenantId === 'string' && typeof credential === 'string') {
        return book.settle({ requestId: job.requestId, tenantId, credential }, settlement);
      }
      if (kind !== 'settled' || settlement.outcome === 'refused') return undefined;
      return settledJobOf(job.requestId, parseStoredJob(String(reply[3])), Number(reply[2]));
    },
    async told(requestId) {
      await calls.attempt('jobs', () => calls.run(toldJobScript, requestId), unanswered);
    },
    async leaseDue(count, leaseMs, pollsPerSecond) {
      const reply = await calls.attempt(
        'jobs',
        () =>
          calls.run(leaseJobsScript, {
            count,
            leaseMs,
            pollsPerSecond,
            maxAgeMs: options.maxAgeMs,
            credentials: options.credentials(),
          }),
        unanswered,
      );
      if (!Array.isArray(reply)) return [];
      const jobs = [];
      for (let index = 1; index + 1 < reply.length; index += 2) {
        jobs.push(trackedJobOf(String(reply[index]), parseStoredJob(String(reply[index + 1]))));
      }
      return jobs;
    },
    async reschedule(requestId, delayMs, polls) {
      await calls.attempt(
        'jobs',
        () => calls.run(rescheduleJobScript, { requestId, delayMs, polls }),
        unanswered,
      );
    },
    async usage(tenantId, daily, monthly): Promise<JobsUsage> {
      const reply = await calls.attempt('jobs', () => calls.run(jobsUsageScript, tenantId), unanswered);
      if (!Array.isArray(reply)) throw new Error('store unavailable');
      const [dayEnd, dayReserved, daySpent, monthEnd, monthReserved, monthSpent, inFlight] = (
        reply as unknown[]
      ).map(Number) as [number, number, number, number, number, number, number];
      const period = (limit: number | undefined, reserved: number, spent: number, end: number) =>
        limit === undefined
          ? undefined
          : { limitMicroUsd: limit, reservedMicroUsd: reserved, spentMicroUsd: spent, resetsAtMs: end };
      return {
        daily: period(daily, dayReserved, daySpent, dayEnd),
        monthly: period(monthly, monthReserved, monthSpent, monthEnd),
        jobsInFlight: inFlight,
      };
    },
    async credentialJobsInFlight(credential) {
      const reply = await calls.attempt(
        'jobs',
        () => calls.send('get', [credentialJobsKey(credential)]),
        unanswered,
      );
      return Number(reply ?? 0);
    },
    async backlog() {
      const reply = await calls.attempt(
        'jobs',
        async () =>
          Promise.all([
            calls.send('zcard', [JOBS_DUE_KEY]),
            calls.send('zrange', [JOBS_ADMITTED_KEY, 0, 0, 'WITHSCORES']),
          ]),
        unanswered,
      );
      if (reply === undefined) return { count: 0, oldestAdmittedAtMs: undefined };
      const [count, oldest] = reply;
      const score: unknown = Array.isArray(oldest) ? oldest[1] : undefined;
      return { count: Number(count), oldestAdmittedAtMs: score === undefined ? undefined : Number(score) };
    },
    async drain() {
      // Submissions of the closing turn still reach the store before the connection goes.
      await submissions?.drain();
    },
  };
  return book;
}

// Creates admitted while the store did not answer (failMode open) are followed once it answers again
// (docs/budgets.md, "Store failures and the overshoot bound"): each waits here, in this replica, from its
// answer until the breaker closes, then one script (adoptJobs-n.lua) records it as reserved at its
// admission, so the tracker settles it like any other job and its real cost is charged once. They go out
// as the breaker closes, right after the undos (store-calls.ts), before this replica's other calls.
//
// Bounded: past MAX_UNRESERVED_JOBS waiting, a job is dropped and counted (it is then never charged). A
// replica that stops with jobs waiting loses them the same way; so does a job whose admission the store
// may have run, whose record is gone when it is adopted (it may have been settled already: adopting it
// could charge it twice).
import type { UnreservedJob } from '../../jobs/book.ts';
import { canonicalRequestId } from '../../ownership/store.ts';
import { isReplyError } from './connection.ts';
import { adoptJobsScript } from './scripts.ts';
import type { StoreCalls } from './store-calls.ts';

/** Jobs waiting per replica for the store to answer again. */
const MAX_UNRESERVED_JOBS = 10_000;
/** Jobs adopted per script call. */
const JOBS_PER_CALL = 100;

export interface AdoptUnreservedOptions {
  /** How long a reserved job waits for its create's answer (the admission's first due time). */
  answerWaitMs: number;
  leaseMs: number;
  /** A job older than this is expired: the adopted mark need not outlive it. */
  maxAgeMs: number;
}

interface Waiting {
  /** The job's canonical request id, its key in the waiting list. */
  key: string;
  job: UnreservedJob;
  onDropped: (job: UnreservedJob) => void;
}

export function createAdoptUnreserved(
  calls: StoreCalls,
  options: AdoptUnreservedOptions,
): (job: UnreservedJob, onDropped: (job: UnreservedJob) => void) => void {
  const waiting = new Map<string, Waiting>();
  let sending = false;

  /**
   * Past this time a missing record of a job whose admission may have run may be one the tracker (which
   * first looks at it after answerWaitMs) settled and forgot: a lease's margin for the clocks' skew.
   */
  const notAfterMs = (job: UnreservedJob) =>
    job.unreserved === 'maybe_taken' ? job.admittedAtMs + options.answerWaitMs - options.leaseMs : undefined;

  async function sendBatch(batch: readonly Waiting[]): Promise<boolean> {
    const replies = await calls.attempt(
      'jobs',
      async () => {
        try {
          return await calls.run(adoptJobsScript, {
            jobs: batch.map(({ job }) => ({ job, notAfterMs: notAfterMs(job) })),
            answerWaitMs: options.answerWaitMs,
            markTtlMs: options.maxAgeMs,
          });
        } catch (error) {
          // Redis ran it and refused: sending it again would fail again.
          if (isReplyError(error)) {
            calls.logger.warn({ err: (error as Error).message }, 'unreserved jobs refused by the store');
            return batch.map(() => 'too_late');
          }
          throw error;
        }
      },
      () => undefined,
    );
    // Not answered: they wait for the next recovery (adopting is once only, so sending again is safe).
    if (!Array.isArray(replies)) return false;
    batch.forEach((entry, index) => {
      waiting.delete(entry.key);
      if (replies[index] !== 'adopted' && replies[index] !== 'known') entry.onDropped(entry.job);
    });
    return true;
  }

  async function sendWaiting(): Promise<void> {
    if (sending) return;
    sending = true;
    try {
      while (waiting.size > 0 && !calls.breaker.open) {
        // The first JOBS_PER_CALL, without copying a list of up to MAX_UNRESERVED_JOBS for each batch.
        const batch: Waiting[] = [];
        for (const entry of waiting.values()) {
          batch.push(entry);
          if (batch.length === JOBS_PER_CALL) break;
        }
        if (!(await sendBatch(batch))) return;
      }
    } finally {
      sending = false;
    }
  }

  calls.breaker.onChange((open) => {
    if (!open) void sendWaiting();
  });

  return (job, onDropped) => {
    if (waiting.size >= MAX_UNRESERVED_JOBS) {
      onDropped(job);
      return;
    }
    const key = canonicalRequestId(job.requestId);
    waiting.set(key, { key, job, onDropped });
    void sendWaiting();
  };
}

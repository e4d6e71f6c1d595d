// One way to end a job, whoever saw the end (the tracker's poll, a tenant's poll or DELETE): settle its
// reservation in the store (exactly once: the store decides which caller settles), then, for the one
// caller that did, count it and tell the listeners (./job-ends.ts), then forget the job. A listener that
// fails leaves the job `ended` in the store: the tracker tells it again after the lease.
import type { JobIdentity, SettledJob, Settlement, JobBook } from './book.ts';
import type { JobEnds } from './job-ends.ts';

export interface SettleJobDeps {
  jobs: JobBook;
  jobEnds: JobEnds;
  /** Metrics and usage of a settlement this replica made. */
  onSettled: (settled: SettledJob) => void;
  /** A listener failed; the job is told again later. */
  onTellFailed: (error: unknown, requestId: string) => void;
}

export type SettleJob = (job: JobIdentity, settlement: Settlement) => Promise<void>;

/** Tells the listeners an ended job's end, then forgets the job; a failure leaves it for the next lease. */
export async function tellJobEnd(deps: SettleJobDeps, settled: Pick<SettledJob, 'end'>): Promise<void> {
  try {
    await deps.jobEnds.tell(settled.end);
  } catch (error) {
    deps.onTellFailed(error, settled.end.requestId);
    return;
  }
  await deps.jobs.told(settled.end.requestId);
}

export function createSettleJob(deps: SettleJobDeps): SettleJob {
  return async (job, settlement) => {
    const settled = await deps.jobs.settle(job, settlement);
    if (settled === undefined) return;
    deps.onSettled(settled);
    await tellJobEnd(deps, settled);
  };
}

// The job store. A job's stage is never advanced by timers: it is computed from its timestamps and the
// clock whenever someone looks, so a test with zero stage durations or an injected clock is exact.
import { randomUUID } from 'node:crypto';
import type { Account } from './accounts.ts';
import { sumUsd } from './pricing.ts';
import type { JobKind, JobPlan } from './submissions.ts';

export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled';

export interface Job extends JobPlan {
  owner: Account;
  createdAtMs: number;
  startedAtMs: number;
  finishesAtMs: number;
  cancelledAtMs: number | undefined;
  fails: boolean;
  /** Unguessable part of the result URLs, which carry no credentials (like pre-signed CDN URLs). */
  fileToken: string;
}

/** Each stage's time once reached (epoch ms), or null. */
export interface Lifecycle {
  status: JobStatus;
  queuedAtMs: number;
  startedAtMs: number | null;
  completedAtMs: number | null;
  cancelledAtMs: number | null;
  updatedAtMs: number;
}

export interface AccountUsage {
  images: number;
  videoSeconds: number;
  costUsd: number;
}

export interface JobStore {
  /** Stores the job, or answers `conflict` when the owner already used this id. */
  submit(owner: Account, plan: JobPlan, options: SubmitOptions): Job | 'conflict';
  find(owner: Account, kind: JobKind, id: string): Job | undefined;
  findByFileToken(fileToken: string): Job | undefined;
  lifecycleOf(job: Job): Lifecycle;
  cancel(job: Job): void;
  /** Jobs of this owner not yet finished, and when the first of them finishes. */
  unfinished(owner: Account): { count: number; nextFinishMs: number | undefined };
  /** What the owner requested since `sinceMs`, and what its completed jobs cost. */
  usageSince(owner: Account, sinceMs: number): AccountUsage;
}

export interface SubmitOptions {
  fails: boolean;
  /** Never finishes (a job the upstream lost). */
  stalls: boolean;
  /** Each result costs this instead of the plan's price. */
  resultCostUsd: number | undefined;
}

export interface JobTimings {
  clock: () => number;
  queuedMs: number;
  processingMs: number;
}

function statusAt(job: Job, at: number): JobStatus {
  if (at < job.startedAtMs) return 'queued';
  if (at < job.finishesAtMs) return 'processing';
  return job.fails ? 'failed' : 'completed';
}

export function isFinished(status: JobStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/**
 * One owner's jobs by id, and those not yet seen finished: the concurrency check reads the latter on every
 * create, where a scan of all the owner's jobs (the simulator keeps them all) made each create cost more
 * than the last. A job leaves `unfinished` once a scan finds it finished.
 */
interface OwnerJobs {
  byId: Map<string, Job>;
  unfinished: Set<Job>;
}

export function createJobStore(timings: JobTimings): JobStore {
  const byOwner = new Map<Account, OwnerJobs>();
  const byFileToken = new Map<string, Job>();

  function jobsOf(owner: Account): OwnerJobs {
    let jobs = byOwner.get(owner);
    if (jobs === undefined) {
      jobs = { byId: new Map(), unfinished: new Set() };
      byOwner.set(owner, jobs);
    }
    return jobs;
  }

  function lifecycleOf(job: Job): Lifecycle {
    // A cancelled job stops where it was when cancelled.
    const at = job.cancelledAtMs ?? timings.clock();
    const reached = (stageMs: number) => (at >= stageMs ? stageMs : null);
    const startedAtMs = reached(job.startedAtMs);
    const completedAtMs = reached(job.finishesAtMs);
    const cancelledAtMs = job.cancelledAtMs ?? null;
    return {
      status: cancelledAtMs === null ? statusAt(job, at) : 'cancelled',
      queuedAtMs: job.createdAtMs,
      startedAtMs,
      completedAtMs,
      cancelledAtMs,
      updatedAtMs: cancelledAtMs ?? completedAtMs ?? startedAtMs ?? job.createdAtMs,
    };
  }

  return {
    submit(owner, plan, options) {
      const jobs = jobsOf(owner);
      if (jobs.byId.has(plan.id)) return 'conflict';
      const createdAtMs = timings.clock();
      const startedAtMs = createdAtMs + timings.queuedMs;
      const { resultCostUsd } = options;
      const results =
        resultCostUsd === undefined
          ? plan.results
          : plan.results.map((result) => ({ ...result, costUsd: resultCostUsd }));
      const job: Job = {
        ...plan,
        results,
        owner,
        createdAtMs,
        startedAtMs,
        finishesAtMs: options.stalls ? Number.POSITIVE_INFINITY : startedAtMs + timings.processingMs,
        cancelledAtMs: undefined,
        fails: options.fails,
        fileToken: randomUUID(),
      };
      jobs.byId.set(job.id, job);
      jobs.unfinished.add(job);
      byFileToken.set(job.fileToken, job);
      return job;
    },
    find(owner, kind, id) {
      const job = byOwner.get(owner)?.byId.get(id.toLowerCase());
      return job?.kind === kind ? job : undefined;
    },
    findByFileToken: (fileToken) => byFileToken.get(fileToken),
    lifecycleOf,
    cancel(job) {
      if (!isFinished(lifecycleOf(job).status)) job.cancelledAtMs = timings.clock();
    },
    unfinished(owner) {
      let count = 0;
      let nextFinishMs: number | undefined;
      const unfinished = byOwner.get(owner)?.unfinished ?? new Set<Job>();
      for (const job of unfinished) {
        if (isFinished(lifecycleOf(job).status)) {
          unfinished.delete(job);
          continue;
        }
        count += 1;
        nextFinishMs = Math.min(nextFinishMs ?? job.finishesAtMs, job.finishesAtMs);
      }
      return { count, nextFinishMs };
    },
    usageSince(owner, sinceMs) {
      const usage = { images: 0, videoSeconds: 0, costUsd: 0 };
      const costs: number[] = [];
      for (const job of byOwner.get(owner)?.byId.values() ?? []) {
        if (job.createdAtMs < sinceMs) continue;
        usage.images += job.images;
        usage.videoSeconds += job.videoSeconds;
        if (lifecycleOf(job).status === 'completed')
          costs.push(...job.results.map((result) => result.costUsd));
      }
      return { ...usage, costUsd: sumUsd(costs) };
    },
  };
}

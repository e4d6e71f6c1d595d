// The job tracker (docs/budgets.md): follows every job to its end without any client polling. Each turn
// it leases the jobs that are due from the store (src/jobs/book.ts: a lease keeps other replicas off a
// job, and moves a dead replica's jobs to another one once it runs out), polls each with the job's own
// credential within that credential's poll rate (kept in the store, summed over every replica), and
// settles the ones that ended (./settle.ts). A job still running is due again after a doubling backoff;
// the upstream's 429 puts it off by its Retry-After. A job older than `jobs.maxAgeSeconds` is given up as
// expired; a reserved job whose create the upstream does not know (404 once its answer is overdue) was
// never accepted, and its reservation is freed.
import type { JobsConfig } from '../config/schema.ts';
import { retryAfterSeconds } from '../upstream/headers.ts';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.ts';
import { headersForUpstream } from '../upstream/headers.ts';
import type { JobBook, TrackedJob } from './book.ts';
import { settlementOfRecord } from './outcome.ts';
import { tellJobEnd, type SettleJob, type SettleJobDeps } from './settle.ts';

/** How one tracker poll went (gengate_tracker_polls_total{result}). */
export type PollResult = 'running' | 'ended' | 'not_found' | 'rate_limited' | 'error';
export const POLL_RESULTS: readonly PollResult[] = ['running', 'ended', 'not_found', 'rate_limited', 'error'];

export interface JobTrackerDeps {
  jobs: JobBook;
  settleJob: SettleJob;
  tell: SettleJobDeps;
  upstream: Pick<UpstreamClient, 'send'>;
  credentials: { get(name: string): string };
  config: () => JobsConfig;
  onPoll: (credential: string, result: PollResult) => void;
  /** The backlog after each turn (gengate_tracker_backlog and _oldest_job_age_seconds). */
  onBacklog: (count: number, oldestAdmittedAtMs: number | undefined) => void;
  onError: (error: unknown) => void;
  now?: () => number;
}

export interface JobTracker {
  /** One turn: lease, poll, settle; resolves with how many jobs it handled. */
  turn(): Promise<number>;
  start(): void;
  /** Stops after the turn in progress. */
  stop(): Promise<void>;
}

// Jobs handled per turn; a full turn is followed at once by the next one.
const JOBS_PER_TURN = 64;
// The pause between turns that found nothing to do.
const IDLE_TURN_MS = 250;
const MS_PER_SECOND = 1_000;

const JOB_PATHS = { 'images.create': '/v1/images/generations/', 'videos.create': '/v1/videos/generations/' };

/** The wait before the next poll of a job polled `polls` times: doubling from firstPollMs up to the most. */
function backoffMs(config: JobsConfig, polls: number): number {
  return Math.min(config.firstPollMs * 2 ** Math.min(polls, 30), config.maxPollIntervalMs);
}

export function createJobTracker(deps: JobTrackerDeps): JobTracker {
  const now = deps.now ?? Date.now;
  let running: Promise<unknown> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;

  async function poll(job: TrackedJob): Promise<UpstreamResponse> {
    const token = deps.credentials.get(job.credential);
    return deps.upstream.send({
      method: 'GET',
      path: `${JOB_PATHS[job.route]}${job.requestId}`,
      headers: headersForUpstream(token, `gengate-tracker-${job.requestId}`, undefined),
    });
  }

  async function follow(job: TrackedJob, config: JobsConfig): Promise<void> {
    if (job.end !== undefined) {
      // Settled by a replica that did not get to tell its listeners.
      await tellJobEnd(deps.tell, { end: job.end });
      return;
    }
    if (now() - job.admittedAtMs >= config.maxAgeSeconds * MS_PER_SECOND) {
      await deps.settleJob(job, { outcome: 'expired' });
      return;
    }
    const polls = job.polls + 1;
    let response: UpstreamResponse;
    try {
      response = await poll(job);
    } catch {
      deps.onPoll(job.credential, 'error');
      await deps.jobs.reschedule(job.requestId, backoffMs(config, polls), polls);
      return;
    }
    if (response.status === 429) {
      deps.onPoll(job.credential, 'rate_limited');
      const retryAfter = retryAfterSeconds(response.headers);
      const delay = Math.max(backoffMs(config, polls), (retryAfter ?? 0) * MS_PER_SECOND);
      await deps.jobs.reschedule(job.requestId, delay, polls);
      return;
    }
    if (response.status === 404 && job.state === 'reserved') {
      // Its create's answer is overdue and the upstream does not know it: never accepted.
      deps.onPoll(job.credential, 'not_found');
      await deps.jobs.settle(job, { outcome: 'refused' });
      return;
    }
    const settlement = response.status < 300 ? settlementOfRecord(response.body) : undefined;
    if (settlement === undefined) {
      deps.onPoll(job.credential, response.status < 300 ? 'running' : 'error');
      await deps.jobs.reschedule(job.requestId, backoffMs(config, polls), polls);
      return;
    }
    deps.onPoll(job.credential, 'ended');
    await deps.settleJob(job, settlement);
  }

  async function turn(): Promise<number> {
    const config = deps.config();
    const leased = await deps.jobs.leaseDue(
      JOBS_PER_TURN,
      config.leaseMs,
      config.maxPollsPerSecondPerCredential,
    );
    await Promise.all(
      leased.map((job) =>
        follow(job, config).catch((error: unknown) => {
          deps.onError(error);
        }),
      ),
    );
    const backlog = await deps.jobs.backlog();
    deps.onBacklog(backlog.count, backlog.oldestAdmittedAtMs);
    return leased.length;
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = turn().then(
        (handled) => {
          schedule(handled >= JOBS_PER_TURN ? 0 : IDLE_TURN_MS);
        },
        (error: unknown) => {
          deps.onError(error);
          schedule(IDLE_TURN_MS);
        },
      );
    }, delayMs);
    // Background work: it never keeps a process alive by itself (the app's onClose stops it).
    timer.unref();
  }

  return {
    turn,
    start() {
      if (!stopped) return;
      stopped = false;
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

// The end of every job, told once to whoever listens (docs/budgets.md, "Job ends"): the seam between the job
// tracker, which settles each job's reservation exactly once, and what must follow a job's end (completion
// webhooks). A listener never learns of a job before its settlement is written in the store.
//
// Delivery: AT LEAST ONCE. The settlement and the duty to tell listeners are one store write: the replica
// whose settlement wins (the store's script decides, so exactly one does) marks the job `ended` in the
// tracked set, calls every listener, and removes the job only once they all resolved. A replica that dies
// (or a listener that throws) between the settlement and that removal leaves the job `ended` and leased;
// the next replica to take its lease calls the listeners again with the same values. So a listener may be
// called twice for one job after a crash, never zero times: it must hand the end off durably before it
// resolves, and treat `requestId` + `outcome` as the idempotency key of what it hands off.
import type { RouteId } from '../config/route-ids.ts';

export type JobOutcome = 'completed' | 'failed' | 'cancelled' | 'expired';

/** The routes that create jobs. */
export type JobRoute = Extract<RouteId, 'images.create' | 'videos.create'>;

export interface JobEnd {
  tenant: string;
  /** The generation's requestId, lower case (src/ownership/store.ts, canonicalRequestId). */
  requestId: string;
  /** The route that created the job. */
  route: JobRoute;
  /** The name of the upstream credential the job was created and polled with. */
  credential: string;
  outcome: JobOutcome;
  /** The upstream's final poll answer body exactly as received (numbers as written); null when expired. */
  record: string | null;
  /** When the job's end was settled. */
  endedAt: Date;
}

/**
 * Called once per job at its settlement (again only after a crash, see above). It resolves once the end is
 * durably handed off; a rejection leaves the job to be told again after its lease (`jobs.leaseMs`).
 */
export type JobEndListener = (end: JobEnd) => Promise<void>;

export interface JobEnds {
  /** Adds a listener; every job settled from then on is told to it. */
  listen(listener: JobEndListener): void;
  /** The tracker's side: tells every listener, resolving when all did (rejecting when one failed). */
  tell(end: JobEnd): Promise<void>;
}

export function createJobEnds(): JobEnds {
  const listeners: JobEndListener[] = [];
  return {
    listen(listener) {
      listeners.push(listener);
    },
    async tell(end) {
      await Promise.all(listeners.map((listener) => listener(end)));
    },
  };
}

// The job book of a store that cannot keep jobs: Redis Cluster, where a job's reservation would touch keys
// of several slots in one script (docs/budgets.md, "Redis Cluster"). Every create passes without a
// reservation and no job is followed; the configuration check refuses budgets and caps on jobs there, so
// nothing this book skips was asked for.
import type { JobBook } from './book.ts';

export function createUntrackedJobBook(): JobBook {
  return {
    reserve: () => Promise.resolve('reserved'),
    submitted: () => Promise.resolve(),
    settle: () => Promise.resolve(undefined),
    told: () => Promise.resolve(),
    leaseDue: () => Promise.resolve([]),
    reschedule: () => Promise.resolve(),
    usage: () => Promise.resolve({ daily: undefined, monthly: undefined, jobsInFlight: 0 }),
    credentialJobsInFlight: () => Promise.resolve(0),
    backlog: () => Promise.resolve({ count: 0, oldestAdmittedAtMs: undefined }),
  };
}

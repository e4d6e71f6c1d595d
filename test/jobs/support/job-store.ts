// The Redis store a job tracker works on, outside a gateway (jobs of the credential `shared`, no budgets,
// logs silenced and metrics in a registry of their own), and the tracker on it. Used by test/jobs/tracker.test.ts and by
// bench/job-costs.ts, which drive a tracker directly.
import pino from 'pino';
import { Registry } from 'prom-client';
import type { JobsConfig } from '../../../src/config/schema.ts';
import { createSettleJob, type SettleJobDeps } from '../../../src/jobs/settle.ts';
import { createJobTracker, type JobTracker } from '../../../src/jobs/tracker.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import type { GatewayStore } from '../../../src/store/gateway-store.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';

export interface JobStoreOptions {
  redisUrl: string;
  /** Keeps stores that share one Redis apart. */
  keyPrefix: string;
  failMode: 'open' | 'closed';
  commandTimeoutMs: number;
  leaseMs: number;
}

export function openJobStore(options: JobStoreOptions): Promise<GatewayStore> {
  return openStore(
    {
      kind: 'redis',
      redis: {
        url: options.redisUrl,
        keyPrefix: options.keyPrefix,
        commandTimeoutMs: options.commandTimeoutMs,
      },
      failMode: options.failMode,
      replicas: 1,
      ownershipTtlSeconds: 3_600,
    },
    {
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(new Registry()),
      jobs: {
        answerWaitMs: 60_000,
        leaseMs: options.leaseMs,
        maxAgeMs: 86_400_000,
        credentials: () => ['shared'],
        budgets: false,
      },
    },
  );
}

export interface TrackerOnStoreOptions {
  upstream: UpstreamClient;
  /** The upstream token of the credential `shared`. */
  token: string;
  config: JobsConfig;
  onSettled?: () => void;
  /** A job end that could not be told, or a failure to follow a job. */
  onFailure?: (error: unknown) => void;
}

/** A job tracker on `store`, settling what it sees end; started by the caller. */
export function trackerOnStore(store: GatewayStore, options: TrackerOnStoreOptions): JobTracker {
  const onFailure = options.onFailure ?? (() => undefined);
  const tell: SettleJobDeps = {
    jobs: store.jobs,
    jobEnds: store.jobEnds,
    onSettled: options.onSettled ?? (() => undefined),
    onTellFailed: onFailure,
  };
  return createJobTracker({
    jobs: store.jobs,
    settleJob: createSettleJob(tell),
    tell,
    upstream: options.upstream,
    credentials: { get: () => options.token },
    config: () => options.config,
    onPoll: () => undefined,
    onBacklog: () => undefined,
    onError: onFailure,
  });
}

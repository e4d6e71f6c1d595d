// The job steps of the pipeline (docs/budgets.md): what admission reserves for a create, what the create's
// answer does to its job (create-outcome.ts: accepted, followed; refused, its reservation freed; unknown,
// left to the tracker), a tenant's poll that shows a job's end and a tenant's DELETE (a cancellation)
// settling it without an extra upstream call, and the tracker, started with the app and stopped when it
// closes.
import type { DoneFuncWithErrOrRes, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/schema.ts';
import type { UnreservedJob } from '../jobs/book.ts';
import { createJobMetrics } from '../jobs/metrics.ts';
import { settlementOfRecord } from '../jobs/outcome.ts';
import { createReservationPlanner } from '../jobs/reservation.ts';
import { createSettleJob, type SettleJobDeps } from '../jobs/settle.ts';
import { createJobTracker } from '../jobs/tracker.ts';
import type { Prices } from '../usage/pricing.ts';
import { createOutcomeOf } from './create-outcome.ts';
import type { GatewayParts } from './pipeline.ts';
import { requestIdParam, routeOf, tenantOf } from './request-state.ts';

const MS_PER_SECOND = 1_000;

const isSuccess = (status: number) => status >= 200 && status < 300;

function payloadBytes(payload: unknown): Buffer | undefined {
  if (Buffer.isBuffer(payload)) return payload;
  return typeof payload === 'string' ? Buffer.from(payload) : undefined;
}

export function installJobFollowing(
  app: FastifyInstance,
  config: GatewayConfig,
  parts: GatewayParts,
  prices: Prices,
) {
  const { store, logger } = parts;
  const now = parts.now ?? Date.now;
  const metrics = createJobMetrics(parts.metrics, store.jobs, Object.keys(config.upstream.credentials));
  const tellDeps: SettleJobDeps = {
    jobs: store.jobs,
    jobEnds: store.jobEnds,
    onSettled(settled) {
      metrics.countSettled(settled, now());
      const { end } = settled;
      if (end.outcome === 'completed') {
        const reported = {
          kind: 'reportedCost',
          requestId: end.requestId,
          costMicroUsd: settled.spentMicroUsd,
        } as const;
        store.usage.record(end.tenant, reported, now());
      }
    },
    onTellFailed(error, requestId) {
      logger.warn(
        { generationId: requestId, err: error instanceof Error ? error.message : String(error) },
        'a job end listener failed; it is told again after the lease',
      );
    },
  };
  const settleJob = createSettleJob(tellDeps);
  const tracker = createJobTracker({
    jobs: store.jobs,
    settleJob,
    tell: tellDeps,
    upstream: parts.upstream,
    credentials: parts.credentials,
    config: () => config.jobs,
    onPoll: metrics.countPoll,
    onBacklog: (count, oldest) => {
      metrics.reportBacklog(count, oldest, now());
    },
    onError: (error) => {
      logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'job tracker turn failed');
    },
    now,
  });
  app.addHook('onReady', (done) => {
    tracker.start();
    done();
  });
  app.addHook('onClose', async () => {
    await tracker.stop();
  });

  const onUnreservedDropped = (job: UnreservedJob) => {
    metrics.countUnreservedDropped(job.tenantId);
    logger.warn(
      { generationId: job.requestId, tenant: job.tenantId },
      'job admitted without reservation not followed',
    );
  };

  const logFailure = (request: FastifyRequest) => (error: unknown) => {
    request.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'job not updated');
  };

  /** onSend of creates: the upstream's answer decides what becomes of the job reserved at admission. */
  function followCreate(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: DoneFuncWithErrOrRes,
  ) {
    const { job, unreservedJob } = request.gateway;
    request.gateway.job = undefined;
    request.gateway.unreservedJob = undefined;
    // Taken or maybe taken upstream: followed once the store answers; refused: nothing to follow.
    const answer = createOutcomeOf(request, reply);
    if (unreservedJob !== undefined && answer !== 'refused') {
      const { firstPollMs } = config.jobs;
      store.jobs.adopt({ ...unreservedJob, answer, firstPollMs }, onUnreservedDropped);
    }
    if (job !== undefined && answer === 'accepted') {
      store.jobs.submitted(job.requestId, config.jobs.firstPollMs).catch(logFailure(request));
    } else if (job !== undefined && answer === 'refused') {
      store.jobs.settle(job, { outcome: 'refused' }).catch(logFailure(request));
    }
    done(null, payload);
  }

  /** onSend of polls and cancels: a tenant's own view of a job's end settles it (no upstream call). */
  function observeJobEnd(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: DoneFuncWithErrOrRes,
  ) {
    const requestId = requestIdParam(request);
    const body = payloadBytes(payload);
    if (requestId !== undefined && body !== undefined && isSuccess(reply.statusCode)) {
      // A DELETE's answer, when it is the record, says how the job ended: a video that had already
      // completed is charged its totalCost, not refunded as cancelled. One that shows no end was cancelled.
      const settlement =
        settlementOfRecord(body) ??
        (routeOf(request).id === 'videos.delete'
          ? { outcome: 'cancelled' as const, record: body.toString('utf8') }
          : undefined);
      if (settlement !== undefined) {
        const tenant = tenantOf(request);
        settleJob({ requestId, tenantId: tenant.id, credential: tenant.credential }, settlement).catch(
          logFailure(request),
        );
      }
    }
    done(null, payload);
  }

  return {
    admitOptions: {
      planReservation: createReservationPlanner(prices, config.upstream.credentials),
      onUnreserved: metrics.countUnreserved,
      jobRetryAfterSeconds: Math.ceil(config.jobs.firstPollMs / MS_PER_SECOND),
      now,
    },
    followCreate,
    observeJobEnd,
    tracker,
  };
}

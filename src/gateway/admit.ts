// The last step before a request is forwarded: its request id and its charge decided together, in one
// store call where the store allows it (src/admission), and the decision turned into rate-limit headers or
// the refusal docs/ownership.md and docs/rate-limits.md name. Runs after authentication, validation and
// policy, so what is charged is what will be sent.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Admission, RequestIdCheck } from '../admission/admission.ts';
import { gatewayError } from '../errors/registry.ts';
import { reservationRefusalError, type PlanReservation } from '../jobs/reservation.ts';
import { ensureRequestId } from '../ownership/request-id.ts';
import type { TakenOutcome } from '../ownership/store.ts';
import type { GatewayRoute } from '../routing/route-table.ts';
import { applicableLimits, limitHeadersOrRefusal, limitLogFields } from '../ratelimit/tenant-limits.ts';
import { bodyOf, requestIdParam, routeOf, tenantOf } from './request-state.ts';

export interface AdmitHookOptions {
  admission: Admission;
  /** What a create reserves (src/jobs/reservation.ts). */
  planReservation: PlanReservation;
  /** Told of each create admitted without its reservation (the store failed, failMode open). */
  onUnreserved: (tenantId: string) => void;
  /** The Retry-After of `too_many_jobs_in_flight`: about when the tracker first looks at a job. */
  jobRetryAfterSeconds: number;
  now: () => number;
  /** The 409 or the idempotent replay of a create whose id is taken (src/gateway/ownership-hooks.ts). */
  answerTakenRequestId: (
    request: FastifyRequest,
    reply: FastifyReply,
    requestId: string,
    outcome: TakenOutcome,
  ) => Promise<FastifyReply>;
}

/** Creates claim their id (assigned here when the client sent none); reads and cancels must own theirs. */
function requestIdCheckOf(request: FastifyRequest, route: GatewayRoute): RequestIdCheck | undefined {
  if (route.method === 'POST') {
    const { body, requestId } = ensureRequestId(bodyOf(request));
    request.gateway.body = body;
    return { requestId, intent: 'claim' };
  }
  const requestId = requestIdParam(request);
  return requestId === undefined ? undefined : { requestId, intent: 'own' };
}

export function createAdmitHook(options: AdmitHookOptions) {
  return async function admit(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply | undefined> {
    const route = routeOf(request);
    const tenant = tenantOf(request);
    const check = requestIdCheckOf(request, route);
    const body = route.method === 'POST' ? bodyOf(request).value : undefined;
    const reservation = options.planReservation(tenant, route.id, body);
    const limits = applicableLimits(tenant, route.id, body);
    const result = await options.admission.admit(tenant.id, limits, check, reservation);
    switch (result.kind) {
      case 'job_refused':
        if (reservation === undefined) throw new Error('a job refused without a reservation');
        throw reservationRefusalError(
          result.refusal,
          reservation,
          options.now(),
          options.jobRetryAfterSeconds,
        );
      case 'request_id_taken':
        return options.answerTakenRequestId(request, reply, check?.requestId ?? '', result.outcome);
      case 'not_owned':
        // The same answer for an unknown id and another tenant's: nothing tells one from the other.
        throw gatewayError('request_not_found', { requestId: check?.requestId ?? '' });
      case 'decided':
        if (result.decision !== undefined) {
          request.gateway.rateLimit = limitLogFields(result.decision);
          reply.headers(limitHeadersOrRefusal(result.decision));
        }
        if (check?.intent === 'claim') {
          request.gateway.ownershipClaim = { requestId: check.requestId, tenantId: tenant.id };
          if (reservation !== undefined) {
            const job = { requestId: check.requestId, tenantId: tenant.id, credential: tenant.credential };
            if (result.unreserved === undefined) request.gateway.job = job;
            else {
              options.onUnreserved(tenant.id);
              // Followed once the store answers again, when the create's answer says it may run.
              request.gateway.unreservedJob = {
                ...job,
                reservation,
                unreserved: result.unreserved,
                admittedAtMs: options.now(),
              };
            }
          }
        }
        return undefined;
    }
  };
}

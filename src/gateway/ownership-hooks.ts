// The ownership steps of the request pipeline (docs/ownership.md, with their order): the
// answer to a create whose requestId is taken, and the settling of a claim once the create is answered.
// The claim itself, and the ownership check of GET and DELETE, are part of admission (src/gateway/admit.ts).
import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest } from 'fastify';
import type { TenantConfig } from '../config/schema.ts';
import { gatewayError } from '../errors/registry.ts';
import { peekTenantLimits } from '../ratelimit/tenant-limits.ts';
import type { RateLimiter } from '../ratelimit/types.ts';
import type { GatewayRoute } from '../routing/route-table.ts';
import type { OwnershipStore, SubmissionResponse, TakenOutcome } from '../ownership/store.ts';
import { submissionFingerprint } from '../ownership/submission-fingerprint.ts';
import { createOutcomeOf } from './create-outcome.ts';
import { bodyOf, routeOf, tenantOf } from './request-state.ts';

const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

export interface OwnershipHooksOptions {
  store: OwnershipStore;
  /** Consulted without charge, for the rate-limit headers of a replay. */
  limiter: RateLimiter;
}

function callerAndRoute(request: FastifyRequest): { tenant: TenantConfig; route: GatewayRoute } {
  return { tenant: tenantOf(request), route: routeOf(request) };
}

/** The fingerprint of a create as its client sent it (before the policy), on the route it came to. */
function fingerprintOf(request: FastifyRequest): string {
  const { clientBody } = request.gateway;
  if (clientBody === undefined) throw new Error('a create without the body its client sent');
  return submissionFingerprint(routeOf(request).id, clientBody);
}

function submissionOf(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): SubmissionResponse | undefined {
  const body = Buffer.isBuffer(payload)
    ? payload
    : typeof payload === 'string'
      ? Buffer.from(payload)
      : undefined;
  if (body === undefined) return undefined;
  const contentType = reply.getHeader('content-type');
  return {
    status: reply.statusCode,
    contentType: typeof contentType === 'string' ? contentType : undefined,
    body,
    fingerprint: fingerprintOf(request),
  };
}

export function createOwnershipHooks(options: OwnershipHooksOptions) {
  const { store, limiter } = options;

  /** A replay is not charged; it still shows the tenant's limits, as they stand, when the store can say. */
  function unchargedLimitHeaders(request: FastifyRequest): Promise<Record<string, string>> {
    const { tenant, route } = callerAndRoute(request);
    return peekTenantLimits(limiter, tenant, route.id, bodyOf(request).value);
  }

  /** A create whose requestId is taken: 409, or the original response again when it is the caller's. */
  async function answerTakenRequestId(
    request: FastifyRequest,
    reply: FastifyReply,
    requestId: string,
    outcome: TakenOutcome,
  ): Promise<FastifyReply> {
    switch (outcome.kind) {
      case 'owned_by_another_tenant':
        throw gatewayError('request_id_in_use', { requestId }, { param: 'requestId' });
      case 'pending':
        throw gatewayError('request_id_in_progress', { requestId }, { param: 'requestId' });
      case 'replay': {
        const { response } = outcome;
        // Another body or another route under the same key: refused, nothing forwarded or charged.
        if (response.fingerprint !== undefined && response.fingerprint !== fingerprintOf(request)) {
          throw gatewayError('request_id_reused', { requestId }, { param: 'requestId' });
        }
        reply
          .code(response.status)
          .headers(await unchargedLimitHeaders(request))
          .header(IDEMPOTENT_REPLAYED_HEADER, 'true');
        if (response.contentType !== undefined) reply.type(response.contentType);
        return reply.send(response.body);
      }
    }
  }

  /**
   * onSend of creates: keeps the accepted submission, or frees an id whose submission did not happen.
   * The write is issued as the answer leaves (it reaches Redis at the end of the same event-loop turn)
   * but not waited for: it is off the request's path. It goes before any command issued after it
   * (src/store/redis/send-per-turn.ts), so this replica's next claim of the id already sees the record.
   */
  function settleClaim(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: DoneFuncWithErrOrRes,
  ): void {
    const claim = request.gateway.ownershipClaim;
    if (claim === undefined) {
      done(null, payload);
      return;
    }
    request.gateway.ownershipClaim = undefined;
    let settled: Promise<void> | undefined;
    // Unknown: the upstream may have taken the submission; the tenant keeps the id and may poll it.
    const outcome = createOutcomeOf(request, reply);
    if (outcome === 'accepted') {
      const submission = submissionOf(request, reply, payload);
      // Without a body to replay the claim stays pending: a repeat is refused, never submitted twice.
      if (submission !== undefined) settled = store.complete(claim.requestId, claim.tenantId, submission);
    } else if (outcome === 'refused') {
      settled = store.release(claim.requestId, claim.tenantId);
    }
    settled?.catch((error: unknown) => {
      request.log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'request id not settled; it stays pending until it expires',
      );
    });
    done(null, payload);
  }

  return { answerTakenRequestId, settleClaim };
}

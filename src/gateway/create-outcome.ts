// What a create's answer says of its submission, for the claim of its requestId (ownership-hooks.ts) and
// the job reserved at admission (job-hooks.ts): taken by the upstream; refused, by the gateway or by the
// upstream, or never sent (the connection could not be made); or unknown: sent, and the upstream may have
// taken it whatever came back (no answer in time, a connection lost, an answer gengate does not pass on).
import type { FastifyReply, FastifyRequest } from 'fastify';

export type CreateOutcome = 'accepted' | 'refused' | 'unknown';

// Answers of whatever stands in front of the service: the service behind it may have taken the create.
const UNKNOWN_UPSTREAM_STATUSES: ReadonlySet<number> = new Set([502, 504]);

export function createOutcomeOf(request: FastifyRequest, reply: FastifyReply): CreateOutcome {
  if (reply.statusCode >= 200 && reply.statusCode < 300) return 'accepted';
  const { sentUpstream, upstreamStatus } = request.gateway;
  if (!sentUpstream) return 'refused';
  // No answer, or a 2xx that was not one to pass on (not JSON): the upstream may have taken it.
  if (upstreamStatus === undefined || upstreamStatus < 300) return 'unknown';
  return UNKNOWN_UPSTREAM_STATUSES.has(upstreamStatus) ? 'unknown' : 'refused';
}

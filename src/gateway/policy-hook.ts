// The policy step of the create routes (a preHandler, after validation, before rate limits): applies the
// tenant's policy to the parsed body, answers a rejection, and replaces the body in the request's state
// with its rewrite, so the limits charge and the upstream receives exactly what the policy decided.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { applyPolicy } from '../policy/apply-policy.ts';
import { POLICY_HEADER, formatPolicyHeader } from '../policy/header.ts';
import {
  enforcedDecisions,
  isRejection,
  type PolicyDecision,
  type PolicyOutcome,
  type PolicyRejection,
  type PolicyRoute,
} from '../policy/outcome.ts';
import { recordPolicyActions } from '../policy/record-actions.ts';
import { rewriteTopLevelMembers } from '../validation/json-body.ts';
import { bodyOf, routeOf, tenantOf } from './request-state.ts';

/** The policy's part of the request log line: rule and action words only, never request values. */
function policyLogFields(outcome: PolicyOutcome): Record<string, string> {
  const fields: Record<string, string> = {};
  if (outcome.changes.length > 0) fields.policy = formatPolicyHeader(outcome.changes);
  if (outcome.rejection !== undefined) fields.policyRejected = outcome.rejection.rule;
  if (outcome.shadowed.length > 0) {
    // What enforce mode would have done, as the metric counts it (the first rejection alone, when a rule
    // rejects); then every other rule the request breaks, so a team sees all that enforcing would touch.
    const enforced = enforcedDecisions(outcome.shadowed);
    fields.policyShadowed = shadowedWords(enforced);
    const others = outcome.shadowed.filter((decision) => !enforced.includes(decision));
    if (others.length > 0) fields.policyShadowedOther = shadowedWords(others);
  }
  return fields;
}

function shadowedWords(decisions: readonly PolicyDecision[]): string {
  return decisions
    .map((decision) =>
      isRejection(decision) ? `${decision.rule}=rejected` : `${decision.field}=${decision.action}`,
    )
    .join(', ');
}

/** The 403 of a rejection: the tenant's bound in the message, the field in `param`. */
export function policyViolation(rejection: Pick<PolicyRejection, 'message' | 'param'>): GatewayError {
  const { message, param } = rejection;
  return gatewayError('policy_violation', { reason: message }, param === undefined ? {} : { param });
}

export function createPolicyHook(metrics: Pick<GatewayMetrics, 'policyActions'>) {
  return function enforcePolicy(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    const route = routeOf(request).id;
    const tenant = tenantOf(request);
    if (route !== 'images.create' && route !== 'videos.create')
      throw new Error('policy applied outside a create route');
    const body = bodyOf(request);
    const outcome = applyPolicy(tenant.policy, route satisfies PolicyRoute, body.value, body.numbers);
    recordPolicyActions(metrics, tenant.id, tenant.policy.mode, outcome);
    request.gateway.policyLog = policyLogFields(outcome);
    if (outcome.rejection !== undefined) throw policyViolation(outcome.rejection);
    if (outcome.body !== body.value) {
      reply.header(POLICY_HEADER, formatPolicyHeader(outcome.changes));
      const rewritten = outcome.changes.map((change) => change.field);
      request.gateway.body = rewriteTopLevelMembers(body, outcome.body, rewritten);
    }
    done();
  };
}

// Counts a policy outcome in `gengate_policy_actions_total{tenant,rule,action,mode}`. Labels come from the
// configuration (tenant, mode) and the fixed rule and action names, never from request data. In shadow
// mode the action counted is what enforce mode would have done with the same request: the first
// rejection alone when a rule rejects, every raise, clamp and set otherwise. So a tenant's shadow series
// preview its enforce series exactly, and switching the mode changes the label, not the counts.
import type { TenantPolicy } from '../config/schema.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { enforcedDecisions, type PolicyDecision, type PolicyOutcome, type PolicyRule } from './outcome.ts';

type PolicyMode = TenantPolicy['mode'];
type PolicyAction = PolicyDecision['action'];

export function recordPolicyActions(
  metrics: Pick<GatewayMetrics, 'policyActions'>,
  tenant: string,
  mode: PolicyMode,
  outcome: PolicyOutcome,
): void {
  const decisions =
    mode === 'shadow'
      ? enforcedDecisions(outcome.shadowed)
      : [...outcome.changes, ...(outcome.rejection === undefined ? [] : [outcome.rejection])];
  for (const { rule, action } of decisions) metrics.policyActions.inc({ tenant, rule, action, mode });
}

/** The actions each configured rule can take (src/policy/rules.ts), given its onViolation. */
function possibleActions(policy: TenantPolicy): [PolicyRule, PolicyAction][] {
  const actions: [PolicyRule, PolicyAction][] = [];
  const { models, video } = policy;
  const modelsCanReject =
    models !== undefined &&
    (models.allow !== undefined || models.deny !== undefined || !models.allowServiceDefault);
  if (modelsCanReject) {
    actions.push(['models', 'rejected']);
  }
  if (video !== undefined && (!video.enabled || video.maxDurationSeconds !== undefined)) {
    actions.push(['video', 'rejected']);
  }
  if (policy.safetyLevel !== undefined) {
    // An image request below the minimum is raised or rejected; one that names no level gets it set.
    const onViolation = policy.safetyLevel.onViolation === 'reject' ? 'rejected' : 'raised';
    actions.push(['safetyLevel', onViolation], ['safetyLevel', 'set']);
  }
  for (const rule of ['samples', 'steps'] as const) {
    const maximum = policy[rule];
    if (maximum !== undefined)
      actions.push([rule, maximum.onViolation === 'reject' ? 'rejected' : 'clamped']);
  }
  if (policy.scanResults?.require === true) actions.push(['scanResults', 'set']);
  if (policy.outputTypes !== undefined) actions.push(['outputTypes', 'rejected']);
  return actions;
}

/** Creates a 0 for every action the tenant's policy can take, in its mode. */
export function startPolicyActionsAtZero(
  metrics: Pick<GatewayMetrics, 'policyActions'>,
  tenant: { id: string; policy: TenantPolicy },
): void {
  const { mode } = tenant.policy;
  for (const [rule, action] of possibleActions(tenant.policy)) {
    metrics.policyActions.inc({ tenant: tenant.id, rule, action, mode }, 0);
  }
}

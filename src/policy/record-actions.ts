// Counts a policy outcome in `gengate_policy_actions_total{tenant,rule,action}`. Labels come from the
// configuration (tenant) and the fixed rule and action names, never from request data.
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { PolicyOutcome } from './outcome.ts';

export function recordPolicyActions(
  metrics: Pick<GatewayMetrics, 'policyActions'>,
  tenant: string,
  outcome: PolicyOutcome,
): void {
  for (const { rule, action } of outcome.changes) metrics.policyActions.inc({ tenant, rule, action });
  if (outcome.rejection !== undefined) {
    metrics.policyActions.inc({ tenant, rule: outcome.rejection.rule, action: 'rejected' });
  }
  for (const { rule } of outcome.shadowed) metrics.policyActions.inc({ tenant, rule, action: 'shadowed' });
}

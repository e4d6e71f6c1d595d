// Per-tenant counters start at 0 as soon as the configuration names the tenant (docs/operations.md,
// "Metrics"), at start-up and again on each reload, so `increase()` and alerts see a tenant's first
// rate-limit refusal, policy action, usage, spending or job end. Series of tenants a reload removes stay: a
// counter is never taken back.
import type { TenantConfig } from '../config/schema.ts';
import { startPolicyActionsAtZero } from '../policy/record-actions.ts';
import type { GatewayStore } from '../store/gateway-store.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';

export function startTenantCountersAtZero(
  tenants: readonly TenantConfig[],
  parts: { metrics: GatewayMetrics; store: Pick<GatewayStore, 'startTenantCountersAtZero'> },
): void {
  for (const tenant of tenants) startPolicyActionsAtZero(parts.metrics, tenant);
  // The usage counters, and the job metrics' (built with the app, after the first call).
  parts.metrics.startTenantSeriesAtZero(tenants);
  parts.store.startTenantCountersAtZero(tenants);
}

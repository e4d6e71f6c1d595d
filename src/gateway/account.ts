// `account: gateway` tenants get their own account views, answered by gengate itself: the upstream's
// account routes describe the whole shared upstream account and would leak other tenants' activity.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { successEnvelope } from '../maxai/envelope.ts';
import { routeOf, tenantOf } from './request-state.ts';
import type { TenantConfig } from '../config/schema.ts';
import type { UsageMeter } from '../usage/meter.ts';
import type { JobBook } from '../jobs/book.ts';
import { budgetView } from '../jobs/usage-view.ts';

/** The tenant's gateway keys in the service's key shape; hashes and plain keys never leave. */
function tenantKeysView(tenant: TenantConfig) {
  return tenant.keys.map((key) => ({
    id: key.prefix,
    userId: tenant.id,
    partialKey: key.prefix,
    name: key.label ?? null,
    permissions: [],
    createdAt: null,
    updatedAt: null,
    description: null,
    expirationDate: key.expiresAt ?? null,
  }));
}

/** The tenant's metered usage, with its budgets and jobs in flight (docs/budgets.md). */
async function usageView(tenant: TenantConfig, usage: UsageMeter, jobs: JobBook, nowMs: number) {
  const [report, budget] = await Promise.all([usage.report(tenant.id, nowMs), budgetView(jobs, tenant)]);
  return { ...report, ...budget };
}

export function createAccountHandler(usage: UsageMeter, jobs: JobBook, now: () => number) {
  return async function answerAccountLocally(request: FastifyRequest, reply: FastifyReply) {
    const tenant = tenantOf(request);
    const data =
      routeOf(request).id === 'account.keys'
        ? tenantKeysView(tenant)
        : await usageView(tenant, usage, jobs, now());
    return reply.type('application/json').send(successEnvelope(data));
  };
}

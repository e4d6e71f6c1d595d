// `account: gateway` tenants get their own account views, answered by gengate itself: the upstream's
// account routes describe the whole shared upstream account and would leak other tenants' activity.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { successEnvelope } from '../maxai/envelope.ts';
import { routeOf, tenantOf } from './request-state.ts';
import type { TenantConfig } from '../config/schema.ts';
import type { UsageMeter } from '../usage/meter.ts';

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

export function createAccountHandler(usage: UsageMeter, now: () => number) {
  return async function answerAccountLocally(request: FastifyRequest, reply: FastifyReply) {
    const tenant = tenantOf(request);
    const data =
      routeOf(request).id === 'account.keys' ? tenantKeysView(tenant) : await usage.report(tenant.id, now());
    return reply.type('application/json').send(successEnvelope(data));
  };
}

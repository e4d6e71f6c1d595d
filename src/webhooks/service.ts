// Completion webhooks: when a tracked job ends, one delivery per tenant webhook that wants the event,
// queued where the jobs are kept (Redis through BullMQ, or this process for the memory store) and sent
// from there, at least once, by whichever replica is free.
import { createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import { formatPath } from '../config/problems.ts';
import type { GatewayConfig, TenantConfig } from '../config/schema.ts';
import type { JobEnd } from '../jobs/job-ends.ts';
import type { Delivery, DeliveryView, WebhookEvent } from './delivery.ts';
import { webhookDestinationWarnings } from './destination-warnings.ts';
import { compileDestinations } from './destinations.ts';
import { createWebhookMetrics } from './metrics.ts';
import type { DeliveryQueue, OpenDeliveryQueue } from './queue/delivery-queue.ts';
import { DestinationSlots, type StepDependencies } from './queue/step.ts';
import { openWebhookSecrets, type SecretLogger, type WebhookSigners } from './secrets.ts';
import { resolveWithSystem, type ResolveHost } from './send.ts';

export interface WebhookService {
  /** Queues the job's event for each of its tenant's webhooks that wants it. */
  onJobEnded(end: JobEnd): Promise<void>;
  list(tenant: string, limit: number): Promise<DeliveryView[]>;
  redeliver(tenant: string, id: string): Promise<boolean>;
  /** Takes a reloaded configuration's tenants: their webhooks, secrets and series. */
  updateTenants(tenants: readonly TenantConfig[]): Promise<void>;
  close(): Promise<void>;
}

export interface WebhookServiceOptions {
  webhooks: GatewayConfig['webhooks'];
  /** The store's queue (src/store/webhook-queue.ts). */
  openQueue: OpenDeliveryQueue;
  tenants: readonly TenantConfig[];
  registry: Registry;
  env: NodeJS.ProcessEnv;
  baseDir: string;
  logger?: SecretLogger;
  /** The resolver of webhook host names; the machine's by default. */
  resolveHost?: ResolveHost;
}

// An answer is read only to learn its status: 64 KiB is more than any acknowledgement needs.
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * The delivery id (the `webhook-id`) of one job's event for one webhook: derived, not drawn, so a job
 * reported twice (a replica that died after settling it) queues one delivery, not two.
 */
export function deliveryIdOf(
  tenant: string,
  webhookId: string,
  requestId: string,
  event: WebhookEvent,
): string {
  const hex = createHash('sha256')
    .update(`${tenant}\u0000${webhookId}\u0000${requestId}\u0000${event}`)
    .digest('hex');
  // Laid out as a UUID of version 8 (RFC 9562: custom), variant 10.
  const variant = ((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function secretsOf(tenants: readonly TenantConfig[]) {
  return tenants.flatMap((tenant, tenantIndex) =>
    tenant.webhooks.map((webhook, index) => ({
      tenant: tenant.id,
      webhookId: webhook.id,
      secret: webhook.secret,
      path: formatPath(['tenants', tenantIndex, 'webhooks', index, 'secret']),
    })),
  );
}

// The record is spliced into the payload as received: a text that is not JSON would corrupt the payload.
function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export async function openWebhookService(options: WebhookServiceOptions): Promise<WebhookService> {
  const { webhooks } = options;
  let tenants = new Map(options.tenants.map((tenant) => [tenant.id, tenant]));
  const secretOptions = {
    env: options.env,
    baseDir: options.baseDir,
    overlapMs: webhooks.secretOverlapSeconds * 1000,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  };
  let signers: WebhookSigners = await openWebhookSecrets(secretsOf(options.tenants), secretOptions);
  // The warnings check-config prints, logged at start and on every reload.
  const warnAboutDestinations = (next: readonly TenantConfig[]) => {
    for (const warning of webhookDestinationWarnings({ webhooks, tenants: next })) {
      options.logger?.warn({ path: warning.path, warning: warning.message }, 'webhook destination warning');
    }
  };
  warnAboutDestinations(options.tenants);
  const shutdown = new AbortController();
  // Read at scrape time only, once the queue below is open.
  const tenantsWithWebhooks = () =>
    [...tenants.values()].filter((tenant) => tenant.webhooks.length > 0).map((tenant) => tenant.id);
  const metrics = createWebhookMetrics(options.registry, () => ({ queue, tenants: tenantsWithWebhooks() }));
  metrics.startTenantsAtZero(options.tenants);
  const step: Omit<StepDependencies, 'endpoints'> = {
    context: {
      send: {
        judge: compileDestinations(webhooks),
        resolveHost: options.resolveHost ?? resolveWithSystem,
        timeoutMs: webhooks.timeoutMs,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        shutdown: shutdown.signal,
      },
      schedule: webhooks.retry,
      signersOf: (tenant, webhookId) => signers.signersOf(tenant, webhookId),
    },
    slots: new DestinationSlots(webhooks.concurrencyPerDestination),
    observe: metrics.observe,
  };
  const queue: DeliveryQueue = await options.openQueue(step);

  return {
    async onJobEnded(settlement) {
      const event: WebhookEvent = `job.${settlement.outcome}`;
      const tenant = tenants.get(settlement.tenant);
      if (tenant === undefined) return;
      const queuedAt = Date.now();
      const deliveries: Delivery[] = tenant.webhooks
        .filter((webhook) => webhook.events.includes(event))
        .map((webhook) => ({
          id: deliveryIdOf(tenant.id, webhook.id, settlement.requestId, event),
          tenant: tenant.id,
          webhookId: webhook.id,
          url: webhook.url,
          event,
          requestId: settlement.requestId,
          route: settlement.route,
          endedAt: settlement.endedAt.toISOString(),
          record: settlement.record !== null && isJsonText(settlement.record) ? settlement.record : null,
          queuedAt,
        }));
      await queue.enqueue(deliveries);
    },
    list: (tenant, limit) => queue.list(tenant, limit),
    redeliver: (tenant, id) => queue.redeliver(tenant, id),
    async updateTenants(next) {
      const nextSigners = await openWebhookSecrets(secretsOf(next), secretOptions);
      signers.close();
      signers = nextSigners;
      tenants = new Map(next.map((tenant) => [tenant.id, tenant]));
      metrics.startTenantsAtZero(next);
      warnAboutDestinations(next);
    },
    async close() {
      // Attempts in flight end now and count as failed: they are retried, here or by another replica.
      shutdown.abort();
      await queue.close();
      signers.close();
    },
  };
}

// The webhook metrics (docs/webhooks.md, "Operations"), registered on the registry the caller owns.
// Tenants and events come from configuration and results from a fixed set, so series stay bounded; the
// counters start at 0 for every tenant with webhooks and the events they want, so increase() sees the
// first dead delivery. Tenants without webhooks have no webhook series.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { TenantConfig } from '../config/schema.ts';
import type { Delivery } from './delivery.ts';
import type { DeliveryQueue } from './queue/delivery-queue.ts';
import type { DeliveryResult } from './queue/step.ts';

const DELIVERY_RESULTS: readonly DeliveryResult[] = ['delivered', 'retried', 'refused', 'dead', 'disabled'];

// Bounds the queue reads of one scrape, well inside any scrape timeout.
const SUMMARY_DEADLINE_MS = 250;

// From a loopback receiver's millisecond to the default attempt bound (10 s) and beyond.
const DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface WebhookMetrics {
  observe: (delivery: Delivery, result: DeliveryResult, durationSeconds: number | undefined) => void;
  /** Starts each tenant's counters at 0 for the events its webhooks want. */
  startTenantsAtZero: (tenants: readonly TenantConfig[]) => void;
}

export function createWebhookMetrics(
  registry: Registry,
  pendingOf: () => { queue: DeliveryQueue; tenants: readonly string[] },
  now: () => number = Date.now,
): WebhookMetrics {
  const deliveries = new Counter({
    name: 'gengate_webhook_deliveries_total',
    help: 'Webhook delivery attempts by result: delivered, retried, refused (destination not allowed), dead (gave up), disabled (410).',
    labelNames: ['tenant', 'event', 'result'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'gengate_webhook_delivery_duration_seconds',
    help: 'Time of one webhook attempt: lookup, connection, request and the bounded read of the answer.',
    buckets: DURATION_BUCKETS_SECONDS,
    registers: [registry],
  });
  // Both gauges read the queue at scrape time: one count and one range read per tenant.
  // A scrape never waits on a queue that does not answer (its Redis down: the queue's commands wait for
  // the connection): past SUMMARY_DEADLINE_MS, or on a failure, the gauges keep the last summary read.
  type Summary = { tenant: string } & Awaited<ReturnType<DeliveryQueue['pending']>>;
  let lastSummaries: Summary[] = [];
  const summaries = async (): Promise<Summary[]> => {
    const source = pendingOf();
    const fresh = Promise.all(
      source.tenants.map(async (tenant) => ({ tenant, ...(await source.queue.pending(tenant)) })),
    ).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        resolve(undefined);
      }, SUMMARY_DEADLINE_MS);
    });
    const read = await Promise.race([fresh, late]);
    clearTimeout(timer);
    if (read !== undefined) lastSummaries = read;
    return lastSummaries;
  };
  new Gauge({
    name: 'gengate_webhook_backlog',
    help: 'Webhook deliveries neither delivered nor dead, per tenant.',
    labelNames: ['tenant'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const { tenant, count } of await summaries()) this.labels(tenant).set(count);
    },
  });
  new Gauge({
    name: 'gengate_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest webhook delivery neither delivered nor dead, per tenant (0 when none).',
    labelNames: ['tenant'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const { tenant, oldestQueuedAt } of await summaries()) {
        this.labels(tenant).set(
          oldestQueuedAt === undefined ? 0 : Math.max(0, (now() - oldestQueuedAt) / 1000),
        );
      }
    },
  });
  return {
    observe: (delivery, result, durationSeconds) => {
      deliveries.labels(delivery.tenant, delivery.event, result).inc();
      if (durationSeconds !== undefined) duration.observe(durationSeconds);
    },
    startTenantsAtZero: (tenants) => {
      for (const tenant of tenants) {
        for (const event of new Set(tenant.webhooks.flatMap((webhook) => webhook.events))) {
          for (const result of DELIVERY_RESULTS) deliveries.labels(tenant.id, event, result).inc(0);
        }
      }
    },
  };
}

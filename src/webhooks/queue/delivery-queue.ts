// What the webhook service asks of a queue, whichever store keeps it: Redis through BullMQ
// (src/store/redis/webhook-queue.ts, every replica sharing it) or this process
// (src/store/memory/webhook-queue.ts); src/store/webhook-queue.ts opens the one the store names.
import type { Delivery, DeliveryView } from '../delivery.ts';
import type { StepDependencies } from './step.ts';

export interface PendingSummary {
  count: number;
  /** When the oldest pending delivery was queued, epoch ms; undefined when none is pending. */
  oldestQueuedAt: number | undefined;
}

export interface DeliveryQueue {
  enqueue(deliveries: readonly Delivery[]): Promise<void>;
  /** The tenant's most recent deliveries, newest first. */
  list(tenant: string, limit: number): Promise<DeliveryView[]>;
  /** Queues one of the tenant's deliveries again; false when the tenant has none by that id. */
  redeliver(tenant: string, id: string): Promise<boolean>;
  /** The deliveries not yet delivered or dead, per tenant. */
  pending(tenant: string): Promise<PendingSummary>;
  close(): Promise<void>;
}

/** Opens the queue of the configured store, running its attempts with these steps. */
export type OpenDeliveryQueue = (step: Omit<StepDependencies, 'endpoints'>) => Promise<DeliveryQueue>;

/** How many deliveries per tenant the list remembers. */
export const RECENT_DELIVERIES_KEPT = 1_000;

/** An endpoint disabled by a 410 stays disabled until its URL changes in the configuration. */
export function endpointKey(delivery: Pick<Delivery, 'tenant' | 'webhookId' | 'url'>): string {
  return `${delivery.tenant}\u0000${delivery.webhookId}\u0000${delivery.url}`;
}

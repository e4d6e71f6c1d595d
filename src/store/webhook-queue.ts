// The webhook delivery queue of the configured store: on Redis through BullMQ, shared by every replica,
// or in this process for the memory store. src/main.ts hands it to the webhook service.
import type { GatewayConfig } from '../config/schema.ts';
import type { DeliveryQueue } from '../webhooks/queue/delivery-queue.ts';
import type { StepDependencies } from '../webhooks/queue/step.ts';
import { openMemoryQueue } from './memory/webhook-queue.ts';
import { openBullmqQueue } from './redis/webhook-queue.ts';

const DEFAULT_LOCK_DURATION_MS = 30_000;
// Attempts in flight in one replica, all destinations together; each destination has its own share.
const WORKER_CONCURRENCY = 64;

export interface WebhookQueueOptions {
  /** Redis only: how long a dead replica's in-flight attempt stays claimed before another takes it. */
  lockDurationMs?: number;
  /** Redis only: whether this replica attempts deliveries, or only queues them. */
  work?: boolean;
}

export async function openWebhookQueue(
  store: GatewayConfig['store'],
  step: Omit<StepDependencies, 'endpoints'>,
  options: WebhookQueueOptions = {},
): Promise<DeliveryQueue> {
  if (store.kind === 'memory') return openMemoryQueue(step);
  return openBullmqQueue({
    redis: {
      url: store.redis.url,
      ...(store.redis.nodes === undefined ? {} : { nodes: store.redis.nodes }),
      keyPrefix: store.redis.keyPrefix,
    },
    step,
    workerConcurrency: WORKER_CONCURRENCY,
    lockDurationMs: options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS,
    work: options.work ?? true,
  });
}

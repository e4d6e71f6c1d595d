// Deliveries on Redis through BullMQ: one queue shared by every replica, each running a worker. A
// delivery is a job whose id is the delivery's id (the `webhook-id`), so enqueueing twice is a no-op and
// a redelivery keeps the id. Retries are the job moved to BullMQ's delayed set at the time
// `stepDelivery` says; a replica that dies mid-attempt loses its lock and BullMQ's stalled-job check
// hands the job to another worker, which attempts it again with the same id (at least once).
// All keys share one hash tag, so the queue works on a Redis Cluster as on a single Redis.
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import type { Delivery, DeliveryView } from '../../webhooks/delivery.ts';
import {
  RECENT_DELIVERIES_KEPT,
  endpointKey,
  type DeliveryQueue,
  type PendingSummary,
} from '../../webhooks/queue/delivery-queue.ts';
import {
  queuedDelivery,
  requeued,
  stepDelivery,
  viewOf,
  type QueuedDelivery,
  type StepDependencies,
} from '../../webhooks/queue/step.ts';

export interface RedisQueueTarget {
  url?: string;
  nodes?: { host: string; port: number }[];
  keyPrefix: string;
}

export interface BullmqQueueOptions {
  redis: RedisQueueTarget;
  step: Omit<StepDependencies, 'endpoints'>;
  /** Attempts in flight in this replica, all destinations together. */
  workerConcurrency: number;
  /** How long a replica's claim on an attempt lasts without renewal: a dead replica's job moves on after it. */
  lockDurationMs: number;
  /** Whether this replica attempts deliveries (false: it only queues, lists and redelivers). */
  work: boolean;
}

const QUEUE_NAME = 'webhooks';
// A destination with no free slot: look again after this long, without counting an attempt.
const BUSY_RETRY_MS = 1_000;
// Delivered ones are kept a week for the tenant's list; dead ones a month, for redelivery.
const KEEP_DELIVERED_SECONDS = 7 * 86_400;
const KEEP_DEAD_SECONDS = 30 * 86_400;
// A replica killed mid-attempt must never turn a delivery dead: its job is always handed on.
const MAX_STALLED_COUNT = 1_000_000;
// BullMQ's connections wait for Redis instead of failing; the job tracker, which hands each job's end
// over here, must hear of a Redis that is down in bounded time (it then tells the end again later).
const ENQUEUE_TIMEOUT_MS = 5_000;

async function withinTime<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`webhook queue did not answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// BullMQ needs connections that wait for Redis rather than fail fast (its blocking reads and retries
// depend on it), and refuses ioredis' keyPrefix: its own prefix carries the hash tag instead.
function connect(target: RedisQueueTarget): Redis | Cluster {
  const options = { maxRetriesPerRequest: null, enableReadyCheck: true };
  if (target.nodes !== undefined && target.nodes.length > 0) {
    return new Cluster(target.nodes, { redisOptions: options });
  }
  return new Redis(target.url ?? 'redis://127.0.0.1:6379/0', options);
}

export async function openBullmqQueue(options: BullmqQueueOptions): Promise<DeliveryQueue> {
  const prefix = `{${options.redis.keyPrefix}webhooks}`;
  const client = connect(options.redis);
  const queue = new Queue<QueuedDelivery>(QUEUE_NAME, { connection: client, prefix });
  const key = (name: string) => `${prefix}:${QUEUE_NAME}:gengate:${name}`;
  const pendingKey = (tenant: string) => key(`pending:${tenant}`);
  const recentKey = (tenant: string) => key(`recent:${tenant}`);
  const disabledKey = key('disabled');

  const endpoints: StepDependencies['endpoints'] = {
    isDisabled: async (delivery) => (await client.hexists(disabledKey, endpointKey(delivery))) === 1,
    disable: async (delivery) => {
      await client.hset(disabledKey, endpointKey(delivery), String(Date.now()));
    },
  };
  const finishPending = async (delivery: QueuedDelivery) => {
    await client.zrem(pendingKey(delivery.tenant), delivery.id);
  };

  const process = async (job: Job<QueuedDelivery>, token?: string) => {
    const step = await stepDelivery(job.data, { ...options.step, endpoints });
    if (step.kind === 'busy') {
      await job.moveToDelayed(Date.now() + BUSY_RETRY_MS, token);
      throw new DelayedError();
    }
    await job.updateData(step.delivery);
    if (step.kind === 'retry') {
      await job.moveToDelayed(step.at, token);
      throw new DelayedError();
    }
    await finishPending(step.delivery);
    if (step.delivery.dead) throw new UnrecoverableError(`dead: ${String(step.delivery.lastStatus)}`);
  };
  const workerClient = options.work ? connect(options.redis) : undefined;
  const worker = workerClient
    ? new Worker<QueuedDelivery>(QUEUE_NAME, process, {
        connection: workerClient,
        prefix,
        concurrency: options.workerConcurrency,
        lockDuration: options.lockDurationMs,
        stalledInterval: options.lockDurationMs,
        maxStalledCount: MAX_STALLED_COUNT,
      })
    : undefined;
  // Errors of the queue, the worker and their connections (Redis gone, a lock not renewed) are BullMQ's
  // and ioredis' to recover from; an 'error' event without a listener would end the process.
  const ignore = () => undefined;
  queue.on('error', ignore);
  worker?.on('error', ignore);
  client.on('error', ignore);
  workerClient?.on('error', ignore);
  // Not waited for: a Redis that is down at start must not hold the gateway's start (it fails open);
  // BullMQ connects in the background.

  const enqueueAll = async (deliveries: readonly Delivery[]) => {
    for (const delivery of deliveries) {
      await client.zadd(pendingKey(delivery.tenant), delivery.queuedAt, delivery.id);
      await client.zadd(recentKey(delivery.tenant), delivery.queuedAt, delivery.id);
      await client.zremrangebyrank(recentKey(delivery.tenant), 0, -RECENT_DELIVERIES_KEPT - 1);
    }
    await queue.addBulk(
      deliveries.map((delivery) => ({
        name: delivery.event,
        data: queuedDelivery(delivery),
        opts: { ...jobOptions, jobId: delivery.id },
      })),
    );
  };

  const jobOptions = {
    removeOnComplete: { age: KEEP_DELIVERED_SECONDS },
    removeOnFail: { age: KEEP_DEAD_SECONDS },
  };

  return {
    async enqueue(deliveries: readonly Delivery[]) {
      if (deliveries.length === 0) return;
      await withinTime(ENQUEUE_TIMEOUT_MS, enqueueAll(deliveries));
    },

    async list(tenant: string, limit: number): Promise<DeliveryView[]> {
      const ids = await client.zrevrange(recentKey(tenant), 0, limit - 1);
      const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
      return jobs.flatMap((job) => (job?.data.tenant === tenant ? [viewOf(job.data)] : []));
    },

    async redeliver(tenant: string, id: string) {
      const job = await queue.getJob(id);
      if (job?.data.tenant !== tenant) return false;
      const state = await job.getState();
      if (state === 'failed' || state === 'completed') {
        const again = requeued(job.data, Date.now());
        await job.updateData(again);
        await client.zadd(pendingKey(tenant), again.queuedAt, id);
        await job.retry(state);
      } else if (state === 'delayed') {
        await job.promote();
      }
      return true;
    },

    async pending(tenant: string): Promise<PendingSummary> {
      const [count, oldest] = await Promise.all([
        client.zcard(pendingKey(tenant)),
        client.zrange(pendingKey(tenant), 0, 0, 'WITHSCORES'),
      ]);
      return { count, oldestQueuedAt: oldest[1] === undefined ? undefined : Number(oldest[1]) };
    },

    async close() {
      // A graceful close waits for Redis to take back the attempts in flight, and never ends while Redis
      // is away (BullMQ 6 waits for its connection): then the worker is closed at once, and what it held
      // is handed on by BullMQ's stalled-job check, as for a replica that died.
      await worker?.close(workerClient?.status !== 'ready');
      await queue.close();
      // Connections handed to BullMQ stay open on its close: they are ours to end.
      workerClient?.disconnect();
      client.disconnect();
    },
  };
}

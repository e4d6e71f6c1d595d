// Deliveries in this process, for the memory store (one replica): the same steps as on Redis
// (src/webhooks/queue/step.ts), scheduled with timers. Nothing survives a restart, as nothing else of the
// memory store does.
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

const BUSY_RETRY_MS = 1_000;

export function openMemoryQueue(step: Omit<StepDependencies, 'endpoints'>): DeliveryQueue {
  const deliveries = new Map<string, QueuedDelivery>();
  // Ids per tenant, oldest first (insertion order), trimmed to what the list shows.
  const recent = new Map<string, string[]>();
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  const disabled = new Set<string>();
  // Deliveries that found their destination's slots all taken, woken one by one as attempts to it end
  // (in one process the queue knows when a slot frees; the Redis queue looks again a second later), and
  // after BUSY_RETRY_MS in any case, in case the slot freed before they queued up.
  const waiting = new Map<string, string[]>();
  const inFlight = new Set<string>();
  const destinationOf = (delivery: Delivery) => new URL(delivery.url).host;
  let closed = false;
  const endpoints: StepDependencies['endpoints'] = {
    isDisabled: (delivery) => Promise.resolve(disabled.has(endpointKey(delivery))),
    disable: (delivery) => {
      disabled.add(endpointKey(delivery));
      return Promise.resolve();
    },
  };

  const schedule = (id: string, at: number) => {
    if (closed) return;
    clearTimeout(timers.get(id));
    const timer = setTimeout(
      () => {
        timers.delete(id);
        const run = attempt(id).finally(() => running.delete(run));
        running.add(run);
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref();
    timers.set(id, timer);
  };

  const attempt = async (id: string) => {
    const delivery = deliveries.get(id);
    // A finished delivery runs again only once redeliver() has queued it anew.
    if (delivery?.nextAttemptAt == null || closed || inFlight.has(id)) return;
    const destination = destinationOf(delivery);
    inFlight.add(id);
    const outcome = await stepDelivery(delivery, { ...step, endpoints }).finally(() => inFlight.delete(id));
    if (outcome.kind === 'busy') {
      waiting.set(destination, [...(waiting.get(destination) ?? []), id]);
      schedule(id, Date.now() + BUSY_RETRY_MS);
      return;
    }
    const next = waiting.get(destination)?.shift();
    if (next !== undefined) schedule(next, Date.now());
    deliveries.set(id, outcome.delivery);
    if (outcome.kind === 'retry') schedule(id, outcome.at);
  };

  return {
    enqueue(batch: readonly Delivery[]) {
      for (const delivery of batch) {
        if (deliveries.has(delivery.id)) continue;
        deliveries.set(delivery.id, queuedDelivery(delivery));
        const ids = recent.get(delivery.tenant) ?? [];
        ids.push(delivery.id);
        for (const forgotten of ids.splice(0, Math.max(0, ids.length - RECENT_DELIVERIES_KEPT))) {
          if (deliveries.get(forgotten)?.nextAttemptAt === null) deliveries.delete(forgotten);
        }
        recent.set(delivery.tenant, ids);
        schedule(delivery.id, delivery.queuedAt);
      }
      return Promise.resolve();
    },

    list(tenant: string, limit: number): Promise<DeliveryView[]> {
      const ids = (recent.get(tenant) ?? []).slice(-limit).reverse();
      return Promise.resolve(ids.flatMap((id) => deliveries.get(id) ?? []).map(viewOf));
    },

    redeliver(tenant: string, id: string) {
      const delivery = deliveries.get(id);
      if (delivery?.tenant !== tenant) return Promise.resolve(false);
      if (!timers.has(id) && delivery.nextAttemptAt === null) {
        const again = requeued(delivery, Date.now());
        deliveries.set(id, again);
      }
      schedule(id, Date.now());
      return Promise.resolve(true);
    },

    pending(tenant: string): Promise<PendingSummary> {
      let count = 0;
      let oldestQueuedAt: number | undefined;
      for (const delivery of deliveries.values()) {
        if (delivery.tenant !== tenant || delivery.nextAttemptAt === null) continue;
        count += 1;
        oldestQueuedAt = Math.min(oldestQueuedAt ?? delivery.queuedAt, delivery.queuedAt);
      }
      return Promise.resolve({ count, oldestQueuedAt });
    },

    async close() {
      closed = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await Promise.all(running);
    },
  };
}

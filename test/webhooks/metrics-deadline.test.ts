// Regression test: with the webhook queue's Redis down, the queue's commands wait for the connection, and
// the backlog gauges read the queue at each scrape; /metrics then hung for the whole outage, Prometheus
// lost the target, and no alert (GengateStoreDegraded among them) could fire. A scrape now waits at most
// SUMMARY_DEADLINE_MS for the queue and shows the last summary it read.
import { Registry } from 'prom-client';
import { expect, test } from 'vitest';
import type { DeliveryQueue, PendingSummary } from '../../src/webhooks/queue/delivery-queue.ts';
import { createWebhookMetrics } from '../../src/webhooks/metrics.ts';

/** A queue whose `pending` answers with `summary`, or never once `answering` is false (Redis down). */
function queueAnswering(summary: PendingSummary) {
  const state = { answering: true };
  const queue = {
    pending: () => (state.answering ? Promise.resolve(summary) : new Promise<PendingSummary>(() => {})),
  } as Partial<DeliveryQueue> as DeliveryQueue;
  return { state, queue };
}

test('a queue that stops answering: the scrape still answers, with the last backlog read', async () => {
  const registry = new Registry();
  const { state, queue } = queueAnswering({ count: 3, oldestQueuedAt: undefined });
  createWebhookMetrics(registry, () => ({ queue, tenants: ['team-a'] }));
  const backlog = async () =>
    (await registry.metrics()).split('\n').find((line) => line.startsWith('gengate_webhook_backlog{'));

  expect(await backlog()).toBe('gengate_webhook_backlog{tenant="team-a"} 3');
  state.answering = false;
  expect(await backlog()).toBe('gengate_webhook_backlog{tenant="team-a"} 3');
});

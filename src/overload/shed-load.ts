// Load shedding (docs/reliability.md, "Overload"): once the process is past its load thresholds, new requests
// get a fast 503 overloaded with Retry-After instead of queueing behind the ones it can still serve,
// readiness reports it so a balancer sends traffic elsewhere, and gengate_overloaded shows it. Requests
// already past the check are served to the end: nothing admitted is dropped.
//
// @fastify/under-pressure samples the event-loop delay (mean over each sample) and the heap; its check
// is a global onRequest hook, so it runs before authentication, body parsing and every store or
// upstream call: a shed request costs almost nothing.
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { getHeapStatistics } from 'node:v8';
import type { GatewayConfig } from '../config/schema.ts';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';

// How often the load is sampled: an overload is seen, and its end too, within this.
const LOAD_SAMPLE_INTERVAL_MS = 250;

export type OverloadSettings = GatewayConfig['server']['overload'];

/** The answer to a request shed because the process, or its upstream concurrency, is at its limit. */
function overloadedError(
  retryAfterSeconds: number,
  name: 'replica_overloaded' | 'upstream_queue_full',
): GatewayError {
  return gatewayError(name, { headers: { 'retry-after': String(retryAfterSeconds) } });
}

/** The heap threshold in bytes, or 0 (under-pressure's "off") when the ratio is 1. */
function maxHeapUsedBytes(ratio: number): number {
  return ratio >= 1 ? 0 : Math.floor(getHeapStatistics().heap_size_limit * ratio);
}

/** Whether `app` sheds new requests now; not before it is ready (the check loads with the plugin). */
export function isOverloaded(app: FastifyInstance): boolean {
  return app.hasDecorator('isUnderPressure') && app.isUnderPressure();
}

export interface LoadSheddingOptions {
  settings: OverloadSettings;
  metrics: Pick<GatewayMetrics, 'loadShed' | 'reportOverloadFrom'>;
}

/** Sheds new requests while the process is overloaded, and reports it in gengate_overloaded. */
export const loadShedding = fp<LoadSheddingOptions>(
  (app, { settings, metrics }, done) => {
    void app.register(underPressure, {
      maxEventLoopDelay: settings.maxEventLoopDelayMs,
      maxHeapUsedBytes: maxHeapUsedBytes(settings.maxHeapUsedRatio),
      sampleInterval: LOAD_SAMPLE_INTERVAL_MS,
      pressureHandler: (_request, _reply, type) => {
        metrics.loadShed.inc({
          reason: type === underPressure.TYPE_HEAP_USED_BYTES ? 'heap' : 'event_loop_delay',
        });
        return Promise.reject(overloadedError(settings.retryAfterSeconds, 'replica_overloaded'));
      },
    });
    metrics.reportOverloadFrom(() => isOverloaded(app));
    done();
  },
  { name: 'gengate-load-shedding', fastify: '5.x' },
);

// Load shedding (docs/reliability.md, "Overload"): once the process is past its load thresholds, new requests
// get a fast 503 overloaded with Retry-After instead of queueing behind the ones it can still serve,
// readiness reports it so a balancer sends traffic elsewhere, and gengate_overloaded shows it. Requests
// already past the check are served to the end: nothing admitted is dropped.
//
// The check is a global onRequest hook, so it runs before authentication, body parsing and every store or
// upstream call: a shed request costs almost nothing, its body is never read, and its connection is
// closed after the answer (the body left in it is not worth reading). The load is sampled on a timer:
//   - the event-loop delay, the mean over each sample, or the sampling timer's own lateness when the loop
//     never turned in between (a loop that held no turn for the whole interval is the worst delay);
//   - the V8 heap used against a share of its limit;
//   - the resident set (RSS, everything the process holds: buffers, sockets, native memory) against a
//     share of the memory limit, the container's (cgroup) unless set: the heap alone missed a process
//     whose unread answers held gigabytes outside it.
// A sample never throws: reading the RSS needs a file descriptor, and a process out of descriptors keeps
// its last value rather than dying of an uncaught error in a timer.
// Between samples, each request is also judged on its own wait (src/overload/queue-wait.ts): one that
// already waited longer than `maxQueueWaitMs` (in the kernel's accept queue or behind a busy event loop)
// is shed at once, as a late answer is worth less to its client than a fast 503 it can retry elsewhere.
// Readiness reports such a shed for the Retry-After it gave.
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { GatewayConfig } from '../config/schema.ts';
import { gatewayError, type GatewayError } from '../errors/registry.ts';
import type { GatewayMetrics, LoadShedReason } from '../observability/metrics.ts';
import { isOutOfDescriptors, rateLimitedLog } from '../server/connection-limits.ts';
import { watchQueueWait } from './queue-wait.ts';

// How often the load is sampled: an overload is seen, and its end too, within this.
const LOAD_SAMPLE_INTERVAL_MS = 250;
// The event-loop delay histogram's resolution; its mean includes it, so it is taken off.
const EVENT_LOOP_RESOLUTION_MS = 10;
const NANOSECONDS_PER_MILLISECOND = 1e6;
// process.constrainedMemory() answers a huge number (2^64 - 1) when no limit applies.
const NO_MEMORY_LIMIT_ABOVE_BYTES = 2 ** 60;

export type OverloadSettings = GatewayConfig['server']['overload'];

/** The answer to a request shed because the process, or its upstream concurrency, is at its limit. */
function overloadedError(
  retryAfterSeconds: number,
  name: 'replica_overloaded' | 'upstream_queue_full',
): GatewayError {
  return gatewayError(name, { headers: { 'retry-after': String(retryAfterSeconds) } });
}

/** The heap threshold in bytes, or undefined (off) when the ratio is 1. */
function maxHeapUsedBytes(ratio: number): number | undefined {
  return ratio >= 1 ? undefined : Math.floor(getHeapStatistics().heap_size_limit * ratio);
}

/** The RSS threshold in bytes: the setting, else a share of the container's limit; undefined when off. */
function maxRssBytes(settings: Pick<OverloadSettings, 'maxRssBytes' | 'maxRssRatio'>): number | undefined {
  if (settings.maxRssBytes > 0) return settings.maxRssBytes;
  const limit = process.constrainedMemory();
  if (settings.maxRssRatio >= 1 || limit <= 0 || limit >= NO_MEMORY_LIMIT_ABOVE_BYTES) return undefined;
  return Math.floor(limit * settings.maxRssRatio);
}

/** The reason the process sheds now, sampled; undefined while it is within its thresholds. */
interface LoadSample {
  current: () => LoadShedReason | undefined;
  stop: () => void;
}

function sampleLoad(settings: OverloadSettings, onOutOfDescriptors: () => void): LoadSample {
  const heapBound = maxHeapUsedBytes(settings.maxHeapUsedRatio);
  const rssBound = maxRssBytes(settings);
  const delays = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  delays.enable();
  let rss = 0;
  let reason: LoadShedReason | undefined;
  let sampledAt = performance.now();
  const sample = () => {
    const now = performance.now();
    const lateMs = now - sampledAt - LOAD_SAMPLE_INTERVAL_MS;
    sampledAt = now;
    const meanMs =
      delays.count > 0 ? delays.mean / NANOSECONDS_PER_MILLISECOND - EVENT_LOOP_RESOLUTION_MS : lateMs;
    delays.reset();
    try {
      rss = process.memoryUsage.rss();
    } catch (error) {
      // Out of file descriptors (EMFILE): the last value stands until one is free again.
      if (isOutOfDescriptors(error)) onOutOfDescriptors();
    }
    if (settings.maxEventLoopDelayMs > 0 && meanMs > settings.maxEventLoopDelayMs)
      reason = 'event_loop_delay';
    else if (rssBound !== undefined && rss > rssBound) reason = 'rss';
    else if (heapBound !== undefined && getHeapStatistics().used_heap_size > heapBound) reason = 'heap';
    else reason = undefined;
  };
  const timer = setInterval(sample, LOAD_SAMPLE_INTERVAL_MS).unref();
  return {
    current: () => reason,
    stop() {
      clearInterval(timer);
      delays.disable();
    },
  };
}

/** Whether `app` sheds new requests now; not before it is ready (the check loads with the plugin). */
export function isOverloaded(app: FastifyInstance): boolean {
  return app.hasDecorator('loadShedReason') && app.loadShedReason() !== undefined;
}

export interface LoadSheddingOptions {
  settings: OverloadSettings;
  metrics: Pick<GatewayMetrics, 'loadShed' | 'reportOverloadFrom' | 'descriptorsExhausted'>;
}

/** Sheds new requests while the process is overloaded, and reports it in gengate_overloaded. */
export const loadShedding = fp<LoadSheddingOptions>(
  (app, { settings, metrics }, done) => {
    const logOutOfDescriptors = rateLimitedLog((failures) => {
      app.log.warn({ server: 'gateway', failures }, 'out of file descriptors; new connections closed');
    });
    const maxQueueWaitMs = settings.maxQueueWaitMs;
    let queueWaitShedAt = Number.NEGATIVE_INFINITY;
    const retryAfterMs = settings.retryAfterSeconds * 1_000;
    const shedForQueueWait = () => {
      queueWaitShedAt = performance.now();
      metrics.loadShed.inc({ reason: 'queue_wait' });
    };
    // Off (0), nothing watches: no tick, no reading of the accept queue, connections handed on untouched.
    const queueWait =
      maxQueueWaitMs > 0
        ? watchQueueWait(app.server, {
            maxQueueWaitMs,
            answer: overloadedError(settings.retryAfterSeconds, 'replica_overloaded'),
            onShed: shedForQueueWait,
          })
        : undefined;
    const load = sampleLoad(settings, () => {
      metrics.descriptorsExhausted.inc();
      logOutOfDescriptors();
    });
    app.decorate('loadShedReason', () => {
      const sampled = load.current();
      if (sampled !== undefined) return sampled;
      // A replica that just told a client to come back in retryAfterSeconds is not ready until then.
      return performance.now() - queueWaitShedAt < retryAfterMs ? 'queue_wait' : undefined;
    });
    const shedWhenOverloaded: onRequestHookHandler = (request, reply, next) => {
      const reason = load.current();
      if (reason !== undefined) metrics.loadShed.inc({ reason });
      else if (queueWait !== undefined && queueWait.waitedMs(request.raw.socket) > maxQueueWaitMs)
        shedForQueueWait();
      else {
        next();
        return;
      }
      reply.header('connection', 'close');
      next(overloadedError(settings.retryAfterSeconds, 'replica_overloaded'));
    };
    app.addHook('onRequest', shedWhenOverloaded);
    app.addHook('onClose', (_app, closed) => {
      load.stop();
      queueWait?.stop();
      closed();
    });
    metrics.reportOverloadFrom(() => isOverloaded(app));
    done();
  },
  { name: 'gengate-load-shedding', fastify: '5.x' },
);

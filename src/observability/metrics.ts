// gengate's Prometheus metrics (docs/operations.md, "Metrics"). Every label value comes from configuration or
// the route table, never from request data, so series stay bounded whatever clients send. The ones updated on
// every request are cell metrics (./cell-metrics.ts): their updates allocate nothing. Counters whose label
// values are a fixed set start at 0 here; the per-tenant ones start at 0 when the configuration names the
// tenant (src/gateway/tenant-series.ts), so increase() and alerts see their first event.
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import packageJson from '../../package.json' with { type: 'json' };
import { FORWARDED_ROUTE_IDS } from '../config/route-ids.ts';
import type { TenantConfig } from '../config/schema.ts';
import { CellCounter, CellHistogram } from './cell-metrics.ts';

// Whole requests and upstream calls: from a refusal answered in half a millisecond to a generation call
// that runs into the upstream timeout (60 s by default) or the server's request timeout (120 s).
const LATENCY_BUCKETS_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120,
];
// The gateway's own work is a few hundred microseconds of CPU per request (docs/performance.md): the
// buckets start at 50 µs so that a regression of a fraction of a millisecond shows.
const OVERHEAD_BUCKETS_SECONDS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

/** Why the gateway answered for an upstream that did not: 504 upstream_timeout, 502 upstream_unavailable. */
export const UPSTREAM_ERROR_REASONS = ['timeout', 'unavailable'] as const;
export type UpstreamErrorReason = (typeof UPSTREAM_ERROR_REASONS)[number];

export const CONFIG_RELOAD_RESULTS = ['success', 'error'] as const;
/** Why a request was shed with 503 overloaded (src/overload/shed-load.ts, src/upstream/client.ts). */
export const LOAD_SHED_REASONS = [
  'event_loop_delay',
  'heap',
  'upstream_queue',
  'rss',
  'queue_wait',
  'bytes_in_flight',
] as const;
export type LoadShedReason = (typeof LOAD_SHED_REASONS)[number];

/** The servers whose connections are bounded (src/server/connection-limits.ts). */
const CONNECTION_SERVERS = ['gateway', 'admin'] as const;

/** Starts a part's per-tenant series at 0 for a configuration's tenants: at start, then on each reload. */
export type StartTenantSeries = (tenants: readonly TenantConfig[]) => void;

export type GatewayMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(registry: Registry = new Registry()) {
  collectDefaultMetrics({ register: registry });
  const upstreamErrors = new Counter({
    name: 'gengate_upstream_errors_total',
    help: 'Requests the upstream did not answer: reason timeout (answered 504) or unavailable (502).',
    labelNames: ['route', 'reason'] as const,
    registers: [registry],
  });
  for (const route of FORWARDED_ROUTE_IDS) {
    for (const reason of UPSTREAM_ERROR_REASONS) upstreamErrors.inc({ route, reason }, 0);
  }
  const configReloads = new Counter({
    name: 'gengate_config_reloads_total',
    help: 'Configuration reloads by result: success, or error when the new file was refused.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of CONFIG_RELOAD_RESULTS) configReloads.inc({ result }, 0);
  const configInfo = new Gauge({
    name: 'gengate_config_info',
    help: 'Always 1; hash names the tenant configuration this replica applies (src/config/identity.ts).',
    labelNames: ['hash'] as const,
    registers: [registry],
  });
  const configLastReloadSuccess = new Gauge({
    name: 'gengate_config_last_reload_success_timestamp_seconds',
    help: 'When this replica last applied a configuration: at start, then at each successful reload.',
    registers: [registry],
  });
  const configLastReloadSuccessful = new Gauge({
    name: 'gengate_config_last_reload_successful',
    help: "1 when this replica's last configuration load was applied, 0 when it was refused.",
    registers: [registry],
  });
  new Gauge({
    name: 'gengate_heap_size_limit_bytes',
    help: "V8's heap size limit: the heap used (nodejs_heap_size_used_bytes) fails the process beyond it.",
    registers: [registry],
    collect() {
      this.set(getHeapStatistics().heap_size_limit);
    },
  });
  const loadShed = new Counter({
    name: 'gengate_load_shed_total',
    help: 'Requests answered 503 overloaded, by reason: event_loop_delay, heap, rss, upstream_queue, or bytes_in_flight.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of LOAD_SHED_REASONS) loadShed.inc({ reason }, 0);
  let overloadedNow = () => false;
  new Gauge({
    name: 'gengate_overloaded',
    help: '1 while the process is past its load thresholds and sheds new requests, 0 otherwise.',
    registers: [registry],
    collect() {
      this.set(overloadedNow() ? 1 : 0);
    },
  });
  // A process outside a container reads as limited by the machine's memory; Node reports no limit as 2^64.
  new Gauge({
    name: 'gengate_memory_limit_bytes',
    help: "The memory the process may use: its container's (cgroup) limit, or the machine's memory without one.",
    registers: [registry],
    collect() {
      this.set(Math.min(process.constrainedMemory() || Infinity, totalmem()));
    },
  });
  const maxReplicas = new Gauge({
    name: 'gengate_config_max_replicas',
    help: 'store.replicas: the most replicas expected to run (the chart: the autoscaler maximum), which fail-open limits divide by.',
    registers: [registry],
  });
  let upstreamExchangesRunning = () => 0;
  new Gauge({
    name: 'gengate_upstream_connections_in_use',
    help: 'Upstream exchanges running now, each on a connection of its own; at upstream.connections requests wait.',
    registers: [registry],
    collect() {
      this.set(upstreamExchangesRunning());
    },
  });
  const upstreamConnectionsLimit = new Gauge({
    name: 'gengate_upstream_connections_limit',
    help: 'upstream.connections: the most upstream exchanges at once.',
    registers: [registry],
  });
  let bytesInFlightHeld = () => 0;
  new Gauge({
    name: 'gengate_bytes_in_flight',
    help: 'Bytes held for exchanges now: request and upstream bodies being read, answers not yet left to their clients.',
    registers: [registry],
    collect() {
      this.set(bytesInFlightHeld());
    },
  });
  const bytesInFlightLimit = new Gauge({
    name: 'gengate_bytes_in_flight_limit',
    help: 'server.maxBytesInFlight: past it a request body is refused unread, or an upstream answer cut, with 503 overloaded.',
    registers: [registry],
  });
  const connectionsRefused = new Counter({
    name: 'gengate_connections_refused_total',
    help: 'New connections closed as soon as accepted because maxConnections were open, by server.',
    labelNames: ['server'] as const,
    registers: [registry],
  });
  for (const server of CONNECTION_SERVERS) connectionsRefused.inc({ server }, 0);
  const descriptorsExhausted = new Counter({
    name: 'gengate_file_descriptors_exhausted_total',
    help: 'Times the process found no file descriptor free (a failed accept, a load sample): new connections are closed meanwhile.',
    registers: [registry],
  });
  const sendTimeouts = new Counter({
    name: 'gengate_send_timeouts_total',
    help: 'Connections destroyed because their answer did not leave within server.sendTimeoutMs (a client not reading).',
    registers: [registry],
  });
  const drainAborted = new Counter({
    name: 'gengate_drain_aborted_requests_total',
    help: 'Requests still in flight when a drain reached server.drainTimeoutMs, and cut.',
    registers: [registry],
  });
  new Gauge({
    name: 'gengate_build_info',
    help: 'Always 1; the labels name the gengate version and the Node.js version running it.',
    labelNames: ['version', 'node_version'] as const,
    registers: [registry],
  }).set({ version: packageJson.version, node_version: process.versions.node }, 1);
  const usageImages = new CellCounter({
    name: 'gengate_usage_images_total',
    help: 'Images requested by tenants (samples of forwarded image creates, after policy).',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const usageVideoSeconds = new CellCounter({
    name: 'gengate_usage_video_seconds_total',
    help: 'Video seconds requested by tenants (durations of forwarded video creates).',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const usageEstimatedCost = new CellCounter({
    name: 'gengate_usage_estimated_cost_usd_total',
    help: 'The expected cost of forwarded creates, from pricing: what admission reserves for them.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const usageReportedCost = new CellCounter({
    name: 'gengate_usage_reported_cost_usd_total',
    help: 'The totalCost the upstream reported for finished records, counted once per record polled.',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const startUsageCountersAtZero: StartTenantSeries = (tenants) => {
    for (const { id } of tenants) {
      usageImages.labels(id);
      usageVideoSeconds.labels(id);
      usageEstimatedCost.labels(id);
      usageReportedCost.labels(id);
    }
  };
  const tenantSeriesStarters = [startUsageCountersAtZero];
  let configuredTenants: readonly TenantConfig[] = [];
  return {
    registry,
    loadShed,
    /** The replicas the configuration expects at most (store.replicas), read once at start. */
    reportMaxReplicas(replicas: number) {
      maxReplicas.set(replicas);
    },
    /** The upstream client's bound, and where gengate_upstream_connections_in_use reads its value. */
    reportUpstreamConnectionsFrom(limit: number, running: () => number) {
      upstreamConnectionsLimit.set(limit);
      upstreamExchangesRunning = running;
    },
    /** The bound on bytes held for answers, and where gengate_bytes_in_flight reads its value. */
    reportBytesInFlightFrom(answers: { readonly limit: number; held: () => number }) {
      bytesInFlightLimit.set(answers.limit);
      bytesInFlightHeld = answers.held;
    },
    drainAborted,
    connectionsRefused,
    descriptorsExhausted,
    sendTimeouts,
    /** Where gengate_overloaded reads its value at each scrape. */
    reportOverloadFrom(overloaded: () => boolean) {
      overloadedNow = overloaded;
    },
    httpRequests: new CellCounter({
      name: 'gengate_http_requests_total',
      help: 'Requests answered by the gateway.',
      labelNames: ['route', 'method', 'status', 'tenant'] as const,
      registers: [registry],
    }),
    httpDuration: new CellHistogram({
      name: 'gengate_http_request_duration_seconds',
      help: 'Time from request received to response sent.',
      labelNames: ['route'] as const,
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    upstreamDuration: new CellHistogram({
      name: 'gengate_upstream_request_duration_seconds',
      help: 'Time waiting on the generation service, by its status ("error" when it did not answer).',
      labelNames: ['route', 'status'] as const,
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    overhead: new CellHistogram({
      name: 'gengate_overhead_seconds',
      help: 'Time spent in the gateway itself: total duration minus upstream wait.',
      labelNames: ['route'] as const,
      buckets: OVERHEAD_BUCKETS_SECONDS,
      registers: [registry],
    }),
    inflight: new Gauge({
      name: 'gengate_inflight_requests',
      help: 'Requests received and not yet answered.',
      registers: [registry],
    }),
    validationFailures: new Counter({
      name: 'gengate_validation_failures_total',
      help: 'Refused request bodies, once per problem field; param is a schema field path, (unknown) or (body).',
      labelNames: ['route', 'param'] as const,
      registers: [registry],
    }),
    policyActions: new Counter({
      name: 'gengate_policy_actions_total',
      help: 'Policy actions by rule: raised, clamped, set or rejected; in shadow mode, what enforce would have done.',
      labelNames: ['tenant', 'rule', 'action', 'mode'] as const,
      registers: [registry],
    }),
    configReloads,
    /** A configuration applied (at start or by a reload): its hash replaces the one reported before. */
    configApplied(hash: string) {
      configInfo.reset();
      configInfo.set({ hash }, 1);
      configLastReloadSuccess.setToCurrentTime();
      configLastReloadSuccessful.set(1);
    },
    /** A reload refused: the replica keeps its configuration, and so its hash. */
    configRefused() {
      configLastReloadSuccessful.set(0);
    },
    upstreamErrors,
    upstreamCredentialRejections: new Counter({
      name: 'gengate_upstream_credential_rejections_total',
      help: "Answers in which the upstream refused one of gengate's own credentials (its 401 or 403), checks included.",
      labelNames: ['credential'] as const,
      registers: [registry],
    }),
    upstreamCredentialRejected: new Gauge({
      name: 'gengate_upstream_credential_rejected',
      help: '1 while the last answer of the upstream to a credential was a refusal (401 or 403), 0 otherwise.',
      labelNames: ['credential'] as const,
      registers: [registry],
    }),
    usageImages,
    usageVideoSeconds,
    usageEstimatedCost,
    usageReportedCost,
    /**
     * Starts every per-tenant series at 0 for the tenants of a configuration: the usage counters, and those
     * of the parts added since (src/gateway/tenant-series.ts calls it at start and on each reload).
     */
    startTenantSeriesAtZero(tenants: readonly TenantConfig[]) {
      configuredTenants = tenants;
      for (const start of tenantSeriesStarters) start(tenants);
    },
    /**
     * A part built after the configuration was applied (the job metrics, built with the app): its series
     * start at once for the tenants configured so far, then for those of each reload.
     */
    addTenantSeries(start: StartTenantSeries) {
      tenantSeriesStarters.push(start);
      start(configuredTenants);
    },
  };
}

// gengate's Prometheus metrics (contract section 10). Every label value comes from configuration or the
// route table, never from request data, so series stay bounded whatever clients send. The ones updated on
// every request are cell metrics (./cell-metrics.ts): their updates allocate nothing.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CellCounter, CellHistogram } from './cell-metrics.ts';

// From sub-millisecond gateway work to the long tail of generation calls.
const LATENCY_BUCKETS_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];
const OVERHEAD_BUCKETS_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

export type GatewayMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(registry: Registry = new Registry()) {
  collectDefaultMetrics({ register: registry });
  return {
    registry,
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
      help: 'Policy decisions by rule: raised, clamped, set or rejected (enforce mode), shadowed (shadow mode).',
      labelNames: ['tenant', 'rule', 'action'] as const,
      registers: [registry],
    }),
    configReloads: new Counter({
      name: 'gengate_config_reloads_total',
      help: 'Configuration reloads by result: success, or error when the new file was refused.',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    usageImages: new CellCounter({
      name: 'gengate_usage_images_total',
      help: 'Images requested by tenants (samples of forwarded image creates, after policy).',
      labelNames: ['tenant'] as const,
      registers: [registry],
    }),
    usageVideoSeconds: new CellCounter({
      name: 'gengate_usage_video_seconds_total',
      help: 'Video seconds requested by tenants (durations of forwarded video creates).',
      labelNames: ['tenant'] as const,
      registers: [registry],
    }),
  };
}

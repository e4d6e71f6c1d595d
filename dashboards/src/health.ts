// The Health dashboard: the shared store, the configuration, capacity and each gengate process.
import { RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as common from '@grafana/grafana-foundation-sdk/common';
import { PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import * as units from '@grafana/grafana-foundation-sdk/units';
import {
  gengateDashboard,
  instantQuery,
  prometheusQuery,
  redFrom,
  runbookLink,
  stackedTimeSeriesPanel,
  statPanel,
  tablePanel,
  timeSeriesPanel,
  twoStateTimelinePanel,
} from './panels.ts';
import { histogramQuantile, select, sumIncrease, sumRate } from './promql.ts';

// Store commands slower than the default commandTimeoutMs (100 ms) count as failed; the alert rules fire
// at an event-loop lag p99 of 0.1 s and at 80% of the file descriptor limit.
const STORE_COMMAND_TIMEOUT_SECONDS = 0.1;
const EVENT_LOOP_LAG_ALERT_SECONDS = 0.1;
const OPEN_FDS_ALERT_RATIO = 0.8;
// Resident memory near the container's limit leaves no room for a large answer before the OOM kill.
const MEMORY_LIMIT_WARNING_RATIO = 0.9;

const CONFIG_RELOADS = 'gengate_config_reloads_total';

export function healthDashboard(): Dashboard {
  return gengateDashboard(
    'gengate-health',
    'gengate / Health',
    'The shared store, the configuration, capacity and each gengate process (event loop, memory, GC, ' +
      'file descriptors, restarts). These series carry no tenant or route, so the dashboard has no such ' +
      'variables.',
    { perTenant: false },
  )
    .withRow(new RowBuilder('Store'))
    .withPanel(
      timeSeriesPanel()
        .title('Store latency p99 by operation')
        .description(
          'The slowest 1% of round trips to the shared store (Redis), per operation, failures included. ' +
            'Good is about a millisecond; at the dashed line (the default commandTimeoutMs, 100 ms) ' +
            'commands are given up on and count as errors.',
        )
        .unit(units.Seconds)
        .min(0)
        .thresholds(redFrom(STORE_COMMAND_TIMEOUT_SECONDS))
        .withTarget(
          prometheusQuery(
            histogramQuantile(0.99, 'gengate_store_operation_duration_seconds', [], ['operation']),
            '{{operation}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Store errors by operation')
        .description(
          'Store operations per second that failed or timed out. Good is 0. Errors on every operation at ' +
            'once are the store down or unreachable; on one, a script or key problem.',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(sumRate(select('gengate_store_errors_total'), ['operation']), '{{operation}}'),
        ),
    )
    .withPanel(
      twoStateTimelinePanel('healthy', 'degraded')
        .title('Store degraded by replica')
        .links([runbookLink('GengateStoreDegraded')])
        .description(
          "Red while a replica's store breaker is open: it does not call the store, and serves rate " +
            'limits from its per-replica fallback (failMode open) or answers 503 store_unavailable ' +
            '(failMode closed). Good is green throughout; the breaker closes by itself once the store answers.',
        )
        .withTarget(
          prometheusQuery(`max by (instance) (${select('gengate_store_degraded')})`, '{{instance}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Store breaker trips')
        .description(
          "Times each replica's store breaker opened, within the trailing rate window. Good is 0; " +
            'trips on every replica together are the store failing; repeated trips on one are its ' +
            'network path.',
        )
        .unit(units.Short)
        .min(0)
        .drawStyle(common.GraphDrawStyle.Bars)
        .withTarget(
          prometheusQuery(
            sumIncrease(select('gengate_store_breaker_trips_total'), '$__rate_interval', ['instance']),
            '{{instance}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Job tracker'))
    .withPanel(
      timeSeriesPanel()
        .title('Oldest job followed')
        .links([runbookLink('GengateJobTrackerBehind')])
        .description(
          "Age of the oldest job the trackers follow, over every replica, as of each replica's last turn. " +
            'Jobs end within minutes: an age of hours is a job whose end is not being learnt ' +
            '(docs/budgets.md).',
        )
        .unit(units.Seconds)
        .min(0)
        .withTarget(
          prometheusQuery(`max(${select('gengate_tracker_oldest_job_age_seconds')})`, 'oldest job age'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Tracker polls by credential and result')
        .description(
          "The trackers' upstream polls per second: running, ended, not_found (a create never accepted), " +
            "rate_limited (the upstream's 429) and error. They spend the account's rate limit, at most " +
            'jobs.maxPollsPerSecondPerCredential over every replica.',
        )
        .unit(units.RequestsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select('gengate_tracker_polls_total'), ['credential', 'result']),
            '{{credential}} {{result}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Jobs in flight by credential')
        .description(
          "Jobs admitted and not yet settled on each upstream credential, over every tenant on it: the account's own cap (maxJobsInFlight) holds this.",
        )
        .unit(units.Short)
        .min(0)
        .withTarget(
          prometheusQuery(
            `max by (credential) (${select('gengate_credential_jobs_in_flight')})`,
            '{{credential}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Configuration'))
    .withPanel(
      timeSeriesPanel()
        .title('Config reloads by result')
        .links([runbookLink('GengateConfigReloadFailing')])
        .description(
          'Configuration reloads within the trailing rate window, by result: success, or error when ' +
            'the new file was refused and the replica kept serving the previous configuration. Every ' +
            'error needs a look (gengate check-config names the problem).',
        )
        .unit(units.Short)
        .min(0)
        .drawStyle(common.GraphDrawStyle.Bars)
        .span(16)
        .withTarget(
          prometheusQuery(
            sumIncrease(select(CONFIG_RELOADS), '$__rate_interval', ['instance', 'result']),
            '{{instance}} {{result}}',
          ),
        ),
    )
    .withPanel(
      statPanel()
        .title('Failed reloads in the time range')
        .links([runbookLink('GengateConfigReloadFailing')])
        .description(
          'Refused configuration reloads over the whole time range picked above, all replicas. Good is ' +
            '0; red from 1: some replica may be serving an older configuration than the file on disk.',
        )
        .unit(units.Short)
        .span(8)
        .height(8)
        .thresholds(redFrom(1))
        .withTarget(
          instantQuery(sumIncrease(select(CONFIG_RELOADS, 'result="error"'), '$__range'), 'failed reloads'),
        ),
    )
    .withPanel(
      tablePanel()
        .title('Configuration by replica')
        .description(
          'The hash of the tenant configuration each replica applies (gengate_config_info). Every replica ' +
            'of a release shows the same hash, but for the minutes of a rollout; two hashes for longer ' +
            'is the alert GengateConfigInconsistent: some replicas refused a live reload, or a rollout ' +
            'is stuck.',
        )
        .links([runbookLink('GengateConfigInconsistent')])
        .unit(units.Short)
        .span(24)
        .height(6)
        .withTarget(
          instantQuery(`max by (instance, hash) (${select('gengate_config_info')})`, '{{instance}}').format(
            PromQueryFormat.Table,
          ),
        ),
    )
    .withRow(new RowBuilder('Capacity'))
    .withPanel(
      timeSeriesPanel()
        .title("Replicas against the autoscaler's maximum")
        .description(
          'Replicas Prometheus scrapes, and the most the configuration expects (store.replicas; the chart ' +
            "sets it to the autoscaler's maximum). Replicas at the maximum for long is a release that " +
            'cannot grow further: raise autoscaling.maxReplicas (store.replicas follows).',
        )
        .links([runbookLink('GengateTargetMissing')])
        .unit(units.Short)
        .min(0)
        .span(8)
        .withTarget(prometheusQuery(`count(${select('gengate_build_info')})`, 'replicas'))
        .withTarget(prometheusQuery(`max(${select('gengate_config_max_replicas')})`, 'maximum')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Upstream connections in use')
        .description(
          'Upstream exchanges running on each replica, against upstream.connections, its bound. At the ' +
            'bound new requests wait for a connection, and after upstream.queueTimeoutMs they are shed ' +
            '(503 overloaded, reason upstream_queue).',
        )
        .links([runbookLink('GengateLoadShedding')])
        .unit(units.Short)
        .min(0)
        .span(8)
        .withTarget(prometheusQuery(select('gengate_upstream_connections_in_use'), '{{instance}}'))
        .withTarget(prometheusQuery(`max(${select('gengate_upstream_connections_limit')})`, 'limit')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Memory against the container limit')
        .description(
          "Each replica's resident memory as a share of the memory it may use: its container's limit " +
            "(the machine's memory outside a container). At 100% the kernel kills the process (OOMKilled); " +
            'the dashed line is 90%.',
        )
        .links([runbookLink('GengateHeapNearLimit')])
        .unit(units.PercentUnit)
        .min(0)
        .max(1)
        .span(8)
        .thresholds(redFrom(MEMORY_LIMIT_WARNING_RATIO))
        .withTarget(
          prometheusQuery(
            `${select('process_resident_memory_bytes')} / ${select('gengate_memory_limit_bytes')}`,
            '{{instance}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Processes'))
    .withPanel(
      timeSeriesPanel()
        .title('Event-loop lag p99')
        .links([runbookLink('GengateEventLoopLagHigh')])
        .description(
          "How late timers fire on each replica's event loop (99th percentile): the time every request " +
            'waits before gengate can even start on it. Good is a few milliseconds; the dashed line is ' +
            'the 0.1 s alert. Rising with CPU near one core is saturation: add replicas.',
        )
        .unit(units.Seconds)
        .min(0)
        .thresholds(redFrom(EVENT_LOOP_LAG_ALERT_SECONDS))
        .withTarget(prometheusQuery(select('nodejs_eventloop_lag_p99_seconds'), '{{instance}}')),
    )
    .withPanel(
      twoStateTimelinePanel('serving', 'shedding')
        .title('Shedding load by replica')
        .links([runbookLink('GengateLoadShedding')])
        .description(
          'Red while a replica is past its load thresholds (server.overload: event-loop delay or heap) ' +
            'and answers new requests 503 overloaded with Retry-After; its /readyz answers 503 meanwhile, ' +
            'so the balancer sends traffic elsewhere. Good is green throughout; red on every replica ' +
            'at once is too little capacity: add replicas.',
        )
        .withTarget(prometheusQuery(`max by (instance) (${select('gengate_overloaded')})`, '{{instance}}')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Requests shed by reason')
        .links([runbookLink('GengateLoadShedding')])
        .description(
          'New requests answered 503 overloaded per second, by what was past its bound: event_loop_delay ' +
            'or heap (the replica itself), upstream_queue (no upstream connection free within ' +
            'upstream.queueTimeoutMs). Good is 0; a steady rate is the alert GengateLoadShedding.',
        )
        .unit(units.RequestsPerSecond)
        .min(0)
        .withTarget(prometheusQuery(sumRate(select('gengate_load_shed_total'), ['reason']), '{{reason}}')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('CPU')
        .description(
          'CPU time per second of each replica; 100% is one core. gengate runs its JavaScript on one ' +
            'thread, so a replica near 100% is saturated whatever the machine has left.',
        )
        .unit(units.PercentUnit)
        .min(0)
        .withTarget(
          prometheusQuery(sumRate(select('process_cpu_seconds_total'), ['instance']), '{{instance}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Memory')
        .links([runbookLink('GengateHeapNearLimit')])
        .description(
          'Per replica: resident memory (RSS), V8 heap in use and allocated, and the heap limit. Heap in ' +
            'use should saw-tooth around a flat level; a floor that keeps rising towards the limit is a ' +
            'leak, and the process dies when it reaches it.',
        )
        .unit(units.BytesIEC)
        .min(0)
        .withTarget(prometheusQuery(select('process_resident_memory_bytes'), '{{instance}} RSS'))
        .withTarget(prometheusQuery(select('nodejs_heap_size_used_bytes'), '{{instance}} heap used'))
        .withTarget(prometheusQuery(select('nodejs_heap_size_total_bytes'), '{{instance}} heap allocated'))
        .withTarget(prometheusQuery(select('gengate_heap_size_limit_bytes'), '{{instance}} heap limit')),
    )
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Time in garbage collection')
        .description(
          'Share of wall-clock time each replica spent in V8 garbage collection, by kind. A few percent ' +
            'is normal under load; a large and growing share, mostly major (mark-sweep-compact), is ' +
            'memory pressure: see the heap beside it.',
        )
        .unit(units.PercentUnit)
        .withTarget(
          prometheusQuery(
            sumRate(select('nodejs_gc_duration_seconds_sum'), ['instance', 'kind']),
            '{{instance}} {{kind}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Open file descriptors')
        .links([runbookLink('GengateFileDescriptorsNearLimit')])
        .description(
          'Open file descriptors (sockets to clients, the upstream and the store) as a share of each ' +
            "replica's limit. Good is well below; the dashed line is the 80% alert, beyond which new " +
            'connections start to fail.',
        )
        .unit(units.PercentUnit)
        .min(0)
        .max(1)
        .thresholds(redFrom(OPEN_FDS_ALERT_RATIO))
        .withTarget(
          prometheusQuery(`${select('process_open_fds')} / ${select('process_max_fds')}`, '{{instance}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Uptime')
        .description(
          "Time since each replica's process started: a drop to zero is a restart (a crash, an OOM kill " +
            'or a rollout). Compare with the versions panel to tell a rollout from a crash.',
        )
        .unit(units.Seconds)
        .min(0)
        .withTarget(prometheusQuery(`time() - ${select('process_start_time_seconds')}`, '{{instance}}')),
    )
    .withPanel(
      statPanel()
        .title('Restarts in the time range')
        .description(
          'Process restarts over the whole time range picked above, all replicas that kept their ' +
            'address (a replaced pod shows as a new replica instead). Good is 0 outside rollouts.',
        )
        .unit(units.Short)
        .span(8)
        .height(8)
        .thresholds(redFrom(1))
        .withTarget(
          instantQuery(`sum(changes(${select('process_start_time_seconds')}[$__range]))`, 'restarts'),
        ),
    )
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Replicas by version')
        .description(
          'Replicas scraped, by gengate version and Node.js version. During a rollout the new version ' +
            'replaces the old; two versions for long is a rollout stuck on failing replicas.',
        )
        .unit(units.Short)
        .span(16)
        .withTarget(
          prometheusQuery(
            `count by (version, node_version) (${select('gengate_build_info')})`,
            '{{version}} (Node {{node_version}})',
          ),
        ),
    )
    .build();
}

// The Overview dashboard: is gengate serving, how fast, and is the time spent in the gateway or upstream?
import { RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as units from '@grafana/grafana-foundation-sdk/units';
import {
  ROUTE,
  TENANT,
  gengateDashboard,
  prometheusQuery,
  redFrom,
  runbookLink,
  stackedTimeSeriesPanel,
  statPanel,
  timeSeriesPanel,
} from './panels.ts';
import { histogramQuantile, rateShare, select, sumRate, sumRateOrZero } from './promql.ts';

const REQUESTS = 'gengate_http_requests_total';
const DURATION = 'gengate_http_request_duration_seconds';
const OVERHEAD = 'gengate_overhead_seconds';
const UPSTREAM_DURATION = 'gengate_upstream_request_duration_seconds';

// Where the alert rules fire: 5% of answers are 5xx; the gateway's own p99 reaches 25 ms.
const ERROR_RATIO_ALERT = 0.05;
const OVERHEAD_P99_ALERT_SECONDS = 0.025;

const SERVER_ERRORS = 'status=~"5.."';

export function overviewDashboard(): Dashboard {
  return gengateDashboard(
    'gengate-overview',
    'gengate / Overview',
    'Traffic, errors and latency by route; the time spent in the gateway itself; the upstream.',
    { perTenant: true },
  )
    .withRow(new RowBuilder('Service level'))
    .withPanel(
      statPanel()
        .title('Request rate')
        .description('Answers per second to the selected tenants and routes, refusals included.')
        .unit(units.RequestsPerSecond)
        .withTarget(prometheusQuery(sumRate(select(REQUESTS, TENANT, ROUTE)), 'requests')),
    )
    .withPanel(
      statPanel()
        .title('5xx ratio')
        .links([runbookLink('GengateErrorRatioHigh')])
        .description(
          'Share of answers that were 5xx (upstream failures, store unavailable, overload). ' +
            'Good is near 0; red at 5%, where the error-ratio alert fires.',
        )
        .unit(units.PercentUnit)
        .thresholds(redFrom(ERROR_RATIO_ALERT))
        .withTarget(prometheusQuery(rateShare(REQUESTS, [TENANT, ROUTE], SERVER_ERRORS, []), '5xx ratio')),
    )
    .withPanel(
      statPanel()
        .title('Latency p99')
        .description(
          'Slowest 1% of requests, from received to answered, over the selected routes. Dominated by ' +
            'the upstream: compare with the gateway overhead beside it.',
        )
        .unit(units.Seconds)
        .withTarget(prometheusQuery(histogramQuantile(0.99, DURATION, [ROUTE]), 'p99')),
    )
    .withPanel(
      statPanel()
        .title('Gateway overhead p99')
        .links([runbookLink('GengateOverheadHigh')])
        .description(
          'Time spent in gengate itself (total minus the upstream wait) for the slowest 1%. Good is a few ' +
            'milliseconds; red at 25 ms, where the overhead alert fires.',
        )
        .unit(units.Seconds)
        .thresholds(redFrom(OVERHEAD_P99_ALERT_SECONDS))
        .withTarget(prometheusQuery(histogramQuantile(0.99, OVERHEAD, [ROUTE]), 'p99')),
    )
    .withPanel(
      statPanel()
        .title('In flight')
        .description(
          'Requests received and not yet answered, summed over replicas. Grows when the upstream slows ' +
            'down; a value that keeps climbing while the request rate does not is a stuck upstream.',
        )
        .unit(units.Short)
        .withTarget(prometheusQuery(`sum(${select('gengate_inflight_requests')})`, 'in flight')),
    )
    .withPanel(
      statPanel()
        .title('Replicas')
        .links([runbookLink('GengateTargetMissing')])
        .description(
          'gengate processes Prometheus scrapes. Fewer than deployed means replicas are down or not ' +
            'scraped; the Health dashboard shows them one by one.',
        )
        .unit(units.Short)
        .withTarget(prometheusQuery(`count(${select('gengate_build_info')})`, 'replicas')),
    )
    .withRow(new RowBuilder('Traffic by route'))
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Requests by route')
        .description(
          'Answers per second by route, stacked. "unmatched" counts paths outside the route table ' +
            '(404/405): a rise there is clients calling what gengate does not forward.',
        )
        .unit(units.RequestsPerSecond)
        .withTarget(prometheusQuery(sumRate(select(REQUESTS, TENANT, ROUTE), ['route']), '{{route}}')),
    )
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Answers by status')
        .description(
          'Answers per second by HTTP status, stacked. 2xx is served work; 4xx are refusals of the ' +
            'gateway (authentication, validation, policy, rate limits; the Tenants dashboard breaks ' +
            'them down); 5xx are failures.',
        )
        .unit(units.RequestsPerSecond)
        .withTarget(prometheusQuery(sumRate(select(REQUESTS, TENANT, ROUTE), ['status']), '{{status}}')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('5xx ratio by route')
        .links([runbookLink('GengateErrorRatioHigh')])
        .description(
          "Share of each route's answers that were 5xx; 0 where a route had none. Good is 0; the " +
            'dashed line is the 5% alert threshold. Upstream failures show on the upstream row below.',
        )
        .unit(units.PercentUnit)
        .min(0)
        .thresholds(redFrom(ERROR_RATIO_ALERT))
        .withTarget(
          prometheusQuery(rateShare(REQUESTS, [TENANT, ROUTE], SERVER_ERRORS, ['route']), '{{route}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Latency by route')
        .description(
          'Median and 99th percentile of the time from request received to answer sent, per route. ' +
            'Creates wait for the upstream to accept the job; polls and account reads should stay fast.',
        )
        .unit(units.Seconds)
        .min(0)
        .withTarget(prometheusQuery(histogramQuantile(0.5, DURATION, [ROUTE], ['route']), '{{route}} p50'))
        .withTarget(prometheusQuery(histogramQuantile(0.99, DURATION, [ROUTE], ['route']), '{{route}} p99')),
    )
    .withRow(new RowBuilder('Gateway overhead'))
    .withPanel(
      timeSeriesPanel()
        .title('Gateway overhead percentiles')
        .links([runbookLink('GengateOverheadHigh')])
        .description(
          'Time spent in gengate itself (authentication, validation, policy, limits, ownership) over the ' +
            'selected routes. Good is a few milliseconds at p99; the dashed line is the 25 ms alert. A ' +
            'rise with a healthy upstream points at the store (Health dashboard) or at CPU saturation.',
        )
        .unit(units.Seconds)
        .min(0)
        .thresholds(redFrom(OVERHEAD_P99_ALERT_SECONDS))
        .withTarget(prometheusQuery(histogramQuantile(0.5, OVERHEAD, [ROUTE]), 'p50'))
        .withTarget(prometheusQuery(histogramQuantile(0.9, OVERHEAD, [ROUTE]), 'p90'))
        .withTarget(prometheusQuery(histogramQuantile(0.99, OVERHEAD, [ROUTE]), 'p99')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Gateway overhead p99 by route')
        .links([runbookLink('GengateOverheadHigh')])
        .description(
          'The 99th percentile of the time spent in gengate, per route: which route is slow in the ' +
            'gateway. Creates do more (policy, limits, ownership) than polls. Dashed: the 25 ms alert.',
        )
        .unit(units.Seconds)
        .min(0)
        .thresholds(redFrom(OVERHEAD_P99_ALERT_SECONDS))
        .withTarget(prometheusQuery(histogramQuantile(0.99, OVERHEAD, [ROUTE], ['route']), '{{route}}')),
    )
    .withRow(new RowBuilder('Upstream'))
    .withPanel(
      timeSeriesPanel()
        .title('Upstream latency by route')
        .links([runbookLink('GengateUpstreamLatencyHigh')])
        .description(
          'Median and 99th percentile of the wait on the generation service, per route, failures ' +
            'included. Requests that time out sit at the configured upstream timeout.',
        )
        .unit(units.Seconds)
        .min(0)
        .withTarget(
          prometheusQuery(histogramQuantile(0.5, UPSTREAM_DURATION, [ROUTE], ['route']), '{{route}} p50'),
        )
        .withTarget(
          prometheusQuery(histogramQuantile(0.99, UPSTREAM_DURATION, [ROUTE], ['route']), '{{route}} p99'),
        ),
    )
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Upstream answers by status')
        .links([runbookLink('GengateUpstreamErrorRatioHigh')])
        .description(
          'Upstream calls per second by the status the generation service answered, stacked; "error" ' +
            'when it did not answer (timeout, refused, reset). Good is 2xx only.',
        )
        .unit(units.RequestsPerSecond)
        .withTarget(
          prometheusQuery(sumRate(select(`${UPSTREAM_DURATION}_count`, ROUTE), ['status']), '{{status}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Upstream 429s and failures')
        .description(
          'Per route: upstream 429s (the shared upstream account is rate limited; tenants get 429 ' +
            'upstream_rate_limited), and calls that got no answer, by reason: timeout (504 ' +
            'upstream_timeout) or unavailable (502 upstream_unavailable). Good is 0.',
        )
        .unit(units.RequestsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRateOrZero(`${UPSTREAM_DURATION}_count`, [ROUTE], 'status="429"', ['route']),
            '{{route}} 429',
          ),
        )
        .withTarget(
          prometheusQuery(
            sumRate(select('gengate_upstream_errors_total', ROUTE), ['route', 'reason']),
            '{{route}} {{reason}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('In-flight requests by replica')
        .description(
          'Requests received and not yet answered, per replica. Even across replicas when the load ' +
            'balancer spreads well; a replica that climbs alone is waiting on something the others are not.',
        )
        .unit(units.Short)
        .min(0)
        .withTarget(
          prometheusQuery(`sum by (instance) (${select('gengate_inflight_requests')})`, '{{instance}}'),
        ),
    )
    .build();
}

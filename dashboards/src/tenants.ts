// The Tenants dashboard: who sends what, what it costs, and what the gateway refused or rewrote for whom.
import { RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as units from '@grafana/grafana-foundation-sdk/units';
import {
  ROUTE,
  TENANT,
  barGaugePanel,
  gengateDashboard,
  instantQuery,
  prometheusQuery,
  runbookLink,
  stackedTimeSeriesPanel,
  timeSeriesPanel,
} from './panels.ts';
import { rateShare, select, sumIncrease, sumRate } from './promql.ts';

const REQUESTS = 'gengate_http_requests_total';
const DECISIONS = 'gengate_rate_limit_decisions_total';
const POLICY_ACTIONS = 'gengate_policy_actions_total';
const ESTIMATED_COST = 'gengate_usage_estimated_cost_usd_total';
const REPORTED_COST = 'gengate_usage_reported_cost_usd_total';
const WEBHOOK_DELIVERIES = 'gengate_webhook_deliveries_total';
const BUDGET_USED = 'gengate_budget_used_ratio';
const BUDGET_SPENT = 'gengate_budget_spent_usd_total';
const JOBS_IN_FLIGHT = 'gengate_jobs_in_flight';
const JOBS_FINISHED = 'gengate_jobs_finished_total';

/** Usage is read per hour, the unit tenants plan and are billed in, rather than per second. */
const PER_HOUR = ' * 3600';

/** Verdicts that refused the request; not_charged and the admitted ones let it through or were not asked. */
const REFUSED_DECISIONS =
  'decision=~"rate_limited|cost_exceeds_limit|store_unavailable|fallback_rate_limited"';

export function tenantsDashboard(): Dashboard {
  return gengateDashboard(
    'gengate-tenants',
    'gengate / Tenants',
    'Per tenant: requests, usage and cost, rate-limit decisions, policy actions and validation failures.',
    { perTenant: true },
  )
    .withRow(new RowBuilder('Requests'))
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Requests by tenant')
        .description(
          'Answers per second to each tenant over the selected routes, stacked. "none" counts requests ' +
            'that named no valid key (401): a rise there is a client with a wrong or expired key.',
        )
        .unit(units.RequestsPerSecond)
        .withTarget(prometheusQuery(sumRate(select(REQUESTS, TENANT, ROUTE), ['tenant']), '{{tenant}}')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Refusals by tenant and status')
        .description(
          'The 4xx answers per second, by tenant and status: 400 validation, 401 keys, 403 policy ' +
            'rejections and costs no limit can hold, 404 requests not owned or unknown paths, 409 ' +
            "requestId conflicts, 429 rate limits (the gateway's or the upstream's). A steady trickle " +
            'is normal; one tenant rising is a client to talk to.',
        )
        .unit(units.RequestsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(REQUESTS, TENANT, ROUTE, 'status=~"4.."'), ['tenant', 'status']),
            '{{tenant}} {{status}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Usage and cost'))
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Images requested per hour')
        .description(
          'Images in the image creates gengate forwarded for each tenant (samples after policy), at ' +
            'the hourly pace of the moment. Compare with what the tenant planned for.',
        )
        .unit(units.Short)
        .withTarget(
          prometheusQuery(
            sumRate(select('gengate_usage_images_total', TENANT), ['tenant']) + PER_HOUR,
            '{{tenant}}',
          ),
        ),
    )
    .withPanel(
      stackedTimeSeriesPanel()
        .title('Video seconds requested per hour')
        .description(
          'Seconds of video in the video creates gengate forwarded for each tenant, at the hourly pace ' +
            'of the moment.',
        )
        .unit(units.Seconds)
        .withTarget(
          prometheusQuery(
            sumRate(select('gengate_usage_video_seconds_total', TENANT), ['tenant']) + PER_HOUR,
            '{{tenant}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Estimated and reported cost per hour')
        .description(
          "USD per hour by tenant: the gateway's estimate of the work it forwarded, at create time, and " +
            'the totalCost the upstream reported when jobs were polled. Reported trails estimated by the ' +
            'job duration and lacks jobs nobody polls; a lasting gap means the pricing table is stale.',
        )
        .unit(units.Dollars)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(ESTIMATED_COST, TENANT), ['tenant']) + PER_HOUR,
            '{{tenant}} estimated',
          ),
        )
        .withTarget(
          prometheusQuery(
            sumRate(select(REPORTED_COST, TENANT), ['tenant']) + PER_HOUR,
            '{{tenant}} reported',
          ),
        ),
    )
    .withPanel(
      barGaugePanel()
        .title('Top tenants by cost in the time range')
        .description(
          'The ten tenants with the highest estimated cost over the whole time range picked above, and ' +
            'the ten with the highest reported cost. Widen the range to see a day or a month.',
        )
        .unit(units.Dollars)
        .withTarget(
          instantQuery(
            `topk(10, ${sumIncrease(select(ESTIMATED_COST, TENANT), '$__range', ['tenant'])})`,
            '{{tenant}} estimated',
          ),
        )
        .withTarget(
          instantQuery(
            `topk(10, ${sumIncrease(select(REPORTED_COST, TENANT), '$__range', ['tenant'])})`,
            '{{tenant}} reported',
          ),
        ),
    )
    .withRow(new RowBuilder('Rate limits'))
    .withPanel(
      timeSeriesPanel()
        .title('Rate-limit decisions by limit')
        .description(
          "Verdicts per second for each tenant's limits, one per request and applicable limit: admitted, " +
            'rate_limited (429), cost_exceeds_limit (403), not_charged (another limit refused), ' +
            'store_unavailable (503, fail-closed), and fallback_* while the store is down in fail-open ' +
            'mode. Any fallback_* or store_unavailable means the store is failing (Health dashboard).',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(DECISIONS, TENANT), ['tenant', 'limit', 'decision']),
            '{{tenant}}/{{limit}} {{decision}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Refused share by limit')
        .links([runbookLink('GengateTenantRateLimited')])
        .description(
          "Share of each limit's verdicts that refused the request. A limit refusing a large share for " +
            'long is set below what the tenant needs, or the tenant is retrying without honouring ' +
            'Retry-After.',
        )
        .unit(units.PercentUnit)
        .min(0)
        .max(1)
        .withTarget(
          prometheusQuery(
            rateShare(DECISIONS, [TENANT], REFUSED_DECISIONS, ['tenant', 'limit']),
            '{{tenant}}/{{limit}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Jobs and budgets'))
    .withPanel(
      timeSeriesPanel()
        .title('Budget used')
        .links([runbookLink('GengateTenantBudgetNearlySpent')])
        .description(
          "Share of each tenant's daily or monthly budget spent or reserved by jobs in flight (the store's " +
            'figure, the same on every replica). At 1 its creates get 429 budget_exceeded until the period ' +
            'resets (docs/budgets.md).',
        )
        .unit(units.PercentUnit)
        .min(0)
        .withTarget(
          prometheusQuery(`max by (tenant, scope) (${select(BUDGET_USED, TENANT)})`, '{{tenant}} {{scope}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Spent per hour')
        .description(
          'USD settled as spent per hour, by tenant: what the upstream reported for completed jobs, the ' +
            'estimate for expired ones.',
        )
        .unit(units.Dollars)
        .min(0)
        .withTarget(
          prometheusQuery(`${sumRate(select(BUDGET_SPENT, TENANT), ['tenant'])}${PER_HOUR}`, '{{tenant}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Jobs in flight by tenant')
        .description(
          "Jobs admitted and not yet settled, by tenant, over every replica. It stays at a tenant's " +
            'jobs.maxInFlight while its creates get 429 too_many_jobs_in_flight.',
        )
        .unit(units.Short)
        .min(0)
        .withTarget(prometheusQuery(`max by (tenant) (${select(JOBS_IN_FLIGHT, TENANT)})`, '{{tenant}}')),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Jobs finished by outcome')
        .description(
          'Jobs settled per second by tenant and outcome: completed, failed and cancelled are refunded or ' +
            'charged what the upstream reported; expired ones (never seen to end) are kept at the estimate.',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(JOBS_FINISHED, TENANT), ['tenant', 'outcome']),
            '{{tenant}} {{outcome}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Completion webhooks'))
    .withPanel(
      timeSeriesPanel()
        .title('Webhook deliveries by result')
        .links([runbookLink('GengateWebhookDeliveriesDead')])
        .description(
          'Webhook attempts per second by tenant and result: delivered (2xx), retried (failed, tried ' +
            'again later), refused (the destination is not allowed), dead (given up, kept for ' +
            'redelivery), disabled (the endpoint answered 410). Retries come and go with receivers; ' +
            'dead and disabled need someone (docs/webhooks.md).',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(WEBHOOK_DELIVERIES, TENANT), ['tenant', 'result']),
            '{{tenant}} {{result}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Webhook backlog')
        .description(
          'Deliveries neither delivered nor dead, per tenant. Every replica reads the same queue, so ' +
            'the panel shows the largest reading rather than a sum.',
        )
        .unit(units.Short)
        .min(0)
        .withTarget(
          prometheusQuery(`max by (tenant) (${select('gengate_webhook_backlog', TENANT)})`, '{{tenant}}'),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Oldest pending webhook')
        .links([runbookLink('GengateWebhookBacklogOld')])
        .description(
          "Age of each tenant's oldest pending delivery. It grows while a receiver is down and drops " +
            'once it is back; past an hour for 15 minutes, GengateWebhookBacklogOld fires.',
        )
        .unit(units.Seconds)
        .min(0)
        .withTarget(
          prometheusQuery(
            `max by (tenant) (${select('gengate_webhook_oldest_pending_age_seconds', TENANT)})`,
            '{{tenant}}',
          ),
        ),
    )
    .withRow(new RowBuilder('Policy and validation'))
    .withPanel(
      timeSeriesPanel()
        .title('Policy actions (enforce mode)')
        .description(
          'Rewrites and rejections per second by tenant, rule and action: raised, clamped or set change ' +
            'the forwarded body; rejected answers 403 policy_violation. Steady shares are expected; a new ' +
            'rule rejecting much is a client that does not know the rule yet.',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(POLICY_ACTIONS, TENANT, 'mode="enforce"'), ['tenant', 'rule', 'action']),
            '{{tenant}} {{rule}} {{action}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Policy actions (shadow mode)')
        .description(
          'What enforce mode would have done for tenants whose policy is in shadow mode, by rule and ' +
            'action; their requests are forwarded untouched. Read it before switching a tenant to ' +
            'enforce: every "rejected" here becomes a 403.',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .withTarget(
          prometheusQuery(
            sumRate(select(POLICY_ACTIONS, TENANT, 'mode="shadow"'), ['tenant', 'rule', 'action']),
            '{{tenant}} {{rule}} {{action}}',
          ),
        ),
    )
    .withPanel(
      timeSeriesPanel()
        .title('Validation failures by param')
        .description(
          'Refused request bodies per second, once per faulty field, by route and param (a schema path; ' +
            '"(unknown)" for fields the schema does not name, "(body)" for invalid JSON). Not per ' +
            'tenant: the tenant variable does not apply. A new param here after a client release is a ' +
            'client bug; after a gengate upgrade, a schema change to check.',
        )
        .unit(units.OpsPerSecond)
        .min(0)
        .span(24)
        .withTarget(
          prometheusQuery(
            sumRate(select('gengate_validation_failures_total', ROUTE), ['route', 'param']),
            '{{route}} {{param}}',
          ),
        ),
    )
    .build();
}

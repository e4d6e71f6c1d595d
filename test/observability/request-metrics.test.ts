// The metrics every request updates (docs/operations.md#metrics), read the way Prometheus reads them: the admin
// server's GET /metrics. They are cell metrics (src/observability/cell-metrics.ts), so this holds their
// exposition to the format prom-client's own classes give: one series per label set, histograms with
// cumulative buckets, +Inf, _sum and _count.
import { getHeapStatistics } from 'node:v8';
import { beforeAll, describe, expect, test } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { useGatewayHarness, useMetricsScraper } from '../support/gateway-harness.ts';
import { exchangeRaw } from '../support/raw-exchange.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGES = '/v1/images/generations';
// Two requests a minute for alpha: the third create is refused by `requests`, while `images` had room.
const LIMITS =
  "[{ id: images, routes: [images.create], cost: samples, limit: 100, windowSeconds: 60 }, { id: requests, routes: ['*'], cost: requests, limit: 2, windowSeconds: 60 }]";

const UNKNOWN_REQUEST_ID = '0b7e4c1a-5d2f-4a8b-9c3e-6f1d2a7b8c9d';

const harness = useGatewayHarness({ alphaLimitsYaml: LIMITS });
const admin = useMetricsScraper(harness);

function send(path: string, init: { method?: string; key?: string; body?: string } = {}) {
  return fetch(`${harness.url}${path}`, {
    method: init.method ?? 'POST',
    headers: {
      ...(init.key === undefined ? {} : { authorization: `Bearer ${init.key}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
}

/** The exposition's lines for one metric family, without HELP and TYPE. */
async function seriesOf(name: string): Promise<string[]> {
  const response = await admin.scrape();
  expect(response.statusCode).toBe(200);
  return response.body
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name}_`));
}

async function typeOf(name: string): Promise<string | undefined> {
  const response = await admin.scrape();
  return response.body.split('\n').find((line) => line.startsWith(`# TYPE ${name} `));
}

describe('per-request metrics on GET /metrics', () => {
  beforeAll(async () => {
    const statuses = [
      (await send(IMAGES, { key: harness.keys.alpha, body: '{"samples":2}' })).status,
      (await send(IMAGES, { key: harness.keys.alpha, body: '{"samples":3}' })).status,
      (await send(IMAGES, { key: harness.keys.alpha, body: '{"samples":1}' })).status,
      // An id nobody claimed: refused by the gateway, never sent upstream.
      (await send(`${IMAGES}/${UNKNOWN_REQUEST_ID}`, { method: 'GET', key: harness.keys.beta })).status,
      (await send(IMAGES, { body: '{}' })).status,
    ];
    expect(statuses).toEqual([200, 200, 429, 404, 401]);
  });

  test('gengate_http_requests_total: one series per route, method, status and tenant', async () => {
    expect(await typeOf('gengate_http_requests_total')).toBe('# TYPE gengate_http_requests_total counter');
    expect((await seriesOf('gengate_http_requests_total')).sort()).toEqual(
      [
        'gengate_http_requests_total{route="images.create",method="POST",status="200",tenant="alpha"} 2',
        'gengate_http_requests_total{route="images.create",method="POST",status="429",tenant="alpha"} 1',
        'gengate_http_requests_total{route="images.get",method="GET",status="404",tenant="beta"} 1',
        // Refused before authentication: no tenant to name.
        'gengate_http_requests_total{route="images.create",method="POST",status="401",tenant="none"} 1',
      ].sort(),
    );
  });

  test('duration histograms: cumulative buckets ending in +Inf, then _sum and _count', async () => {
    expect(await typeOf('gengate_http_request_duration_seconds')).toBe(
      '# TYPE gengate_http_request_duration_seconds histogram',
    );
    const create = (await seriesOf('gengate_http_request_duration_seconds')).filter((line) =>
      line.includes('route="images.create"'),
    );
    const buckets = create.filter((line) => line.includes('_bucket{'));
    expect(buckets.map((line) => /le="([^"]+)"/.exec(line)?.[1])).toEqual([
      '0.0005',
      '0.001',
      '0.0025',
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '0.5',
      '1',
      '2.5',
      '5',
      '10',
      '20',
      '30',
      '60',
      '120',
      '+Inf',
    ]);
    const counts = buckets.map((line) => Number(line.split(' ')[1]));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.at(-1)).toBe(4);
    expect(create).toContain('gengate_http_request_duration_seconds_count{route="images.create"} 4');
    const sum = Number(
      create.find((line) => line.startsWith('gengate_http_request_duration_seconds_sum'))?.split(' ')[1],
    );
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(60);
  });

  test('the upstream histogram counts only exchanges, by the upstream status', async () => {
    const counts = (await seriesOf('gengate_upstream_request_duration_seconds')).filter((line) =>
      line.startsWith('gengate_upstream_request_duration_seconds_count'),
    );
    expect(counts).toEqual([
      'gengate_upstream_request_duration_seconds_count{route="images.create",status="200"} 2',
    ]);
    const overhead = await seriesOf('gengate_overhead_seconds');
    expect(overhead).toContain('gengate_overhead_seconds_count{route="images.create"} 4');
    expect(overhead).toContain('gengate_overhead_seconds_bucket{le="+Inf",route="images.create"} 4');
    // The gateway's own work is sub-millisecond: the overhead buckets resolve it from 50 µs.
    expect(
      overhead
        .filter(
          (line) => line.startsWith('gengate_overhead_seconds_bucket') && line.includes('images.create'),
        )
        .map((line) => /le="([^"]+)"/.exec(line)?.[1]),
    ).toEqual([
      '0.00005',
      '0.0001',
      '0.00025',
      '0.0005',
      '0.001',
      '0.0025',
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '+Inf',
    ]);
  });

  test('rate-limit decisions per limit, from 0 for every verdict a memory store gives', async () => {
    expect((await seriesOf('gengate_rate_limit_decisions_total')).sort()).toEqual(
      [
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="images",decision="admitted"} 2',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="images",decision="rate_limited"} 0',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="images",decision="not_charged"} 1',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="images",decision="cost_exceeds_limit"} 0',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="requests",decision="admitted"} 2',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="requests",decision="rate_limited"} 1',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="requests",decision="not_charged"} 0',
        'gengate_rate_limit_decisions_total{tenant="alpha",limit="requests",decision="cost_exceeds_limit"} 0',
      ].sort(),
    );
  });

  test('usage counters per tenant, from 0 for every configured tenant', async () => {
    expect(await seriesOf('gengate_usage_images_total')).toEqual([
      'gengate_usage_images_total{tenant="alpha"} 5',
      'gengate_usage_images_total{tenant="beta"} 0',
      'gengate_usage_images_total{tenant="gamma"} 0',
    ]);
    // The harness prices no image (pricing.images is empty), so images are estimated at 0; nothing was polled.
    for (const name of ['gengate_usage_estimated_cost_usd_total', 'gengate_usage_reported_cost_usd_total']) {
      expect(await seriesOf(name)).toEqual(
        ['alpha', 'beta', 'gamma'].map((tenant) => `${name}{tenant="${tenant}"} 0`),
      );
    }
  });

  test('upstream errors and configuration reloads start at 0 for every route, reason and result', async () => {
    const upstreamErrors = await seriesOf('gengate_upstream_errors_total');
    expect(upstreamErrors).toHaveLength(7 * 2);
    expect(upstreamErrors).toContain(
      'gengate_upstream_errors_total{route="images.create",reason="timeout"} 0',
    );
    expect(upstreamErrors).toContain(
      'gengate_upstream_errors_total{route="account.keys",reason="unavailable"} 0',
    );
    expect(await seriesOf('gengate_config_reloads_total')).toEqual([
      'gengate_config_reloads_total{result="success"} 0',
      'gengate_config_reloads_total{result="error"} 0',
    ]);
  });

  test('build information and the heap size limit, read at scrape', async () => {
    expect(await seriesOf('gengate_build_info')).toEqual([
      `gengate_build_info{version="${packageJson.version}",node_version="${process.versions.node}"} 1`,
    ]);
    const response = await admin.scrape();
    expect(response.body).toContain(
      `\ngengate_heap_size_limit_bytes ${getHeapStatistics().heap_size_limit}\n`,
    );
  });
});

// Regression: what Node's parser refuses is answered outside any request's lifecycle (src/errors/client-error.ts)
// and was counted nowhere, so a broken or hostile client's traffic did not show on any dashboard.
test('answers to malformed HTTP, an unknown method and a CONNECT count as unmatched requests', async () => {
  const unmatched = async () => {
    const metrics = await harness.metrics.registry.metrics();
    return metrics.split('\n').filter((line) => line.includes('route="unmatched"'));
  };
  expect(await unmatched()).toEqual([]);
  const statuses: (number | undefined)[] = [];
  for (const raw of [
    'NOT HTTP AT ALL\r\n\r\n',
    'FOO /v1/account/usage HTTP/1.1\r\nHost: gateway.test\r\n\r\n',
    `GET /v1/account/usage HTTP/1.1\r\nHost: gateway.test\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    'CONNECT gateway.test:443 HTTP/1.1\r\nHost: gateway.test:443\r\n\r\n',
  ]) {
    statuses.push((await exchangeRaw(harness.url, raw, { answers: 1 })).answers[0]?.status);
  }
  expect(statuses).toEqual([400, 405, 431, 404]);
  expect((await unmatched()).sort()).toEqual(
    [
      'gengate_http_requests_total{route="unmatched",method="other",status="400",tenant="none"} 1',
      'gengate_http_requests_total{route="unmatched",method="other",status="405",tenant="none"} 1',
      'gengate_http_requests_total{route="unmatched",method="other",status="431",tenant="none"} 1',
      // CONNECT is a method Node parses, but not one of the method label's values; its target is no path.
      'gengate_http_requests_total{route="unmatched",method="other",status="404",tenant="none"} 1',
    ].sort(),
  );
});

describe('gengate_inflight_requests', () => {
  async function inflight(): Promise<number> {
    const response = await admin.scrape();
    const line = response.body.split('\n').find((each) => each.startsWith('gengate_inflight_requests '));
    if (line === undefined) throw new Error('gengate_inflight_requests is not exposed');
    return Number(line.slice('gengate_inflight_requests '.length));
  }

  // Regression: a request whose client went away never finished, so it had no log line and no count,
  // though its create was forwarded (and charged) all the same.
  test('counts a request while it is served, and forgets it when its client goes away', async () => {
    expect(await inflight()).toBe(0);
    const abandonedId = 'abandoned-create-1';
    // The upstream holds the next create, so the request is in flight until its client gives up. Held
    // well past the one second a scrape may be cached for (docs/operations.md, "Metrics and logs"): held
    // for only a second, the request could come and go between two cached scrapes.
    harness.simulator.faults.set({ delayMs: 4_000, times: 1, match: { method: 'POST' } });
    const client = new AbortController();
    const abandoned = fetch(`${harness.url}${IMAGES}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${harness.keys.gamma}`,
        'content-type': 'application/json',
        'x-request-id': abandonedId,
      },
      body: '{"samples":1}',
      signal: client.signal,
    }).catch((error: unknown) => error);
    await waitFor('the request to be in flight', async () => (await inflight()) === 1);
    client.abort();
    expect(await abandoned).toMatchObject({ name: 'AbortError' });
    await waitFor('the abandoned request to leave', async () => (await inflight()) === 0);
    // Its one line and its count, with the status nginx gives a request its client closed: 499.
    const lines = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.reqId === abandonedId);
    expect(lines).toMatchObject([
      { msg: 'request', route: 'images.create', tenant: 'gamma', method: 'POST', status: 499 },
    ]);
    const metrics = await harness.metrics.registry.metrics();
    expect(metrics).toContain(
      'gengate_http_requests_total{route="images.create",method="POST",status="499",tenant="gamma"} 1',
    );
    // A request served to the end leaves too.
    expect((await send(IMAGES, { key: harness.keys.gamma, body: '{"samples":1}' })).status).toBe(200);
    expect(await inflight()).toBe(0);
  });
});

// Every metric a dashboard queries is one gengate exports: a real gateway process with a Redis store (so
// every store metric is registered) is scraped, and each name in each panel query and variable must be
// one of its families, or a histogram's _bucket, _sum or _count series.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  oneTenantConfig,
  startGatewayProcess,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { DASHBOARD_FILES, dataPanels, readDashboard, type DashboardJson } from './committed-json.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';

// Words of PromQL that look like metric names once strings, matchers and windows are gone.
const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);
const HISTOGRAM_SERIES = /^(.+)_(bucket|sum|count)$/;

/**
 * The metric names an expression selects: what is left once label values, label matchers, range windows
 * and grouping label lists are removed, except function names (followed by a parenthesis) and keywords.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const words = [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)].map((match) => match[1]!);
  return words.filter((word) => !PROMQL_KEYWORDS.has(word.toLowerCase()));
}

function queriedNames(dashboard: DashboardJson): Set<string> {
  const names = new Set<string>();
  for (const panel of dataPanels(dashboard)) {
    for (const target of panel.targets ?? []) {
      const selected = metricNamesIn(target.expr ?? '');
      expect(selected, `${panel.title}: ${target.expr}`).not.toEqual([]);
      for (const name of selected) names.add(name);
    }
  }
  for (const variable of dashboard.templating.list) {
    const labelValuesOf = /^label_values\((\w+),/.exec(variable.query ?? '')?.[1];
    if (labelValuesOf !== undefined) names.add(labelValuesOf);
  }
  return names;
}

/** Family name to type, from the `# TYPE` lines of a Prometheus text exposition. */
function familiesIn(exposition: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(name!, type!);
  return families;
}

function isExported(name: string, families: Map<string, string>): boolean {
  if (families.has(name)) return true;
  const family = HISTOGRAM_SERIES.exec(name)?.[1];
  return family !== undefined && families.get(family) === 'histogram';
}

test('the name extraction finds metrics, not functions, labels or windows', () => {
  expect(
    metricNamesIn(
      'histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{route=~"$route", x="y{z}"}[$__rate_interval]))) ' +
        'or sum(increase(b_total[$__range])) * 0 / time() - c unless on (instance) d',
    ),
  ).toEqual(['a_bucket', 'b_total', 'c', 'd']);
});

let redis: RedisServer;
let gateway: GatewayProcess;
let families: Map<string, string>;

beforeAll(async () => {
  redis = await startRedisServer();
  const key = canaryTenantKey();
  const configPath = await writeTempConfig(
    oneTenantConfig({
      // Never called: the test only reads the metrics the process registers at start-up.
      upstreamUrl: 'http://127.0.0.1:9',
      keys: [key],
      store: `{ kind: redis, redis: { url: "${redis.url}" } }`,
    }),
  );
  gateway = await startGatewayProcess(configPath, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared });
  const response = await fetch(`${gateway.adminUrl}/metrics`);
  families = familiesIn(await response.text());
});

afterAll(async () => {
  gateway.signal('SIGTERM');
  await gateway.exited;
  await redis.stop();
});

describe.each(DASHBOARD_FILES)('%s', (file) => {
  test('queries only metrics gengate exports', () => {
    const unknown = [...queriedNames(readDashboard(file))].filter((name) => !isExported(name, families));
    expect(unknown).toEqual([]);
  });
});

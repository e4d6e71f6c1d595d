// Cell metrics must read exactly as prom-client's own Counter and Histogram would for the same updates,
// in every way a registry can be read: Prometheus, dashboards and alert rules cannot tell which one
// produced a series.
import { describe, expect, test } from 'vitest';
import { Counter, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { CellCounter, CellHistogram } from '../../src/observability/cell-metrics.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const HISTOGRAM = {
  name: 'h_seconds',
  help: 'h',
  labelNames: ['route', 'status'] as const,
  buckets: BUCKETS,
};
const COUNTER = { name: 'c_total', help: 'c', labelNames: ['tenant', 'limit', 'decision'] as const };
// On each bound, between bounds, below the first, above the last, and a second label set.
const OBSERVATIONS: [string, string, number][] = [
  ['a', '200', 0.001],
  ['a', '200', 0.0005],
  ['a', '200', 0.05],
  ['a', '200', 0.1],
  ['a', '200', 1],
  ['a', '200', 7],
  ['b', '500', 0.02],
];
const INCREMENTS: [string, string, string, number][] = [
  ['alpha', 'images', 'admitted', 1],
  ['alpha', 'images', 'admitted', 3],
  ['alpha', 'requests', 'rate_limited', 1],
  ['beta', 'images', 'admitted', 0.5],
];

/** The same updates into prom-client's classes in one registry and into cell metrics in another. */
function twoRegistries(openMetrics = false) {
  const [reference, cells] = [new Registry(), new Registry()];
  if (openMetrics) {
    // prom-client's typings fix a registry's format at construction; the registry itself can switch.
    for (const registry of [reference, cells]) {
      (registry as Registry<RegistryContentType>).setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    }
  }
  const promHistogram = new Histogram({ ...HISTOGRAM, registers: [reference] });
  const promCounter = new Counter({ ...COUNTER, registers: [reference] });
  const cellHistogram = new CellHistogram({ ...HISTOGRAM, registers: [cells] });
  const cellCounter = new CellCounter({ ...COUNTER, registers: [cells] });
  for (const [route, status, value] of OBSERVATIONS) {
    promHistogram.observe({ route, status }, value);
    cellHistogram.labels(route, status).observe(value);
  }
  for (const [tenant, limit, decision, amount] of INCREMENTS) {
    promCounter.inc({ tenant, limit, decision }, amount);
    cellCounter.labels(tenant, limit, decision).inc(amount);
  }
  return { reference, cells, cellCounter, cellHistogram };
}

/** getMetricsAsJSON without exemplars, which cell metrics do not keep (prom-client gives null ones). */
async function seriesAsJson(registry: Registry) {
  return (await registry.getMetricsAsJSON()).map(({ name, help, type, aggregator, values }) => ({
    name,
    help,
    type,
    aggregator,
    values: values.map(({ labels, value, ...rest }) => ({
      labels,
      value,
      metricName: 'metricName' in rest ? rest.metricName : name,
    })),
  }));
}

describe('cell metrics read as prom-client metrics', () => {
  test('Prometheus text: the same lines, bounds inclusive, buckets cumulative, then +Inf, _sum, _count', async () => {
    const { reference, cells } = twoRegistries();
    const text = await reference.metrics();
    expect(text).toContain('h_seconds_bucket{le="0.1",route="a",status="200"} 4');
    expect(text).toContain('c_total{tenant="alpha",limit="images",decision="admitted"} 4');
    expect(await cells.metrics()).toBe(text);
  });

  test('OpenMetrics text, where the registry renames counters', async () => {
    const { reference, cells } = twoRegistries(true);
    const text = await reference.metrics();
    expect(text).toContain('# TYPE c counter');
    expect(await cells.metrics()).toBe(text);
    // A second scrape renames nothing twice.
    expect(await cells.metrics()).toBe(await reference.metrics());
  });

  test('the JSON form, default labels included', async () => {
    const { reference, cells } = twoRegistries();
    expect(await seriesAsJson(cells)).toEqual(await seriesAsJson(reference));
    for (const registry of [reference, cells]) registry.setDefaultLabels({ replica: 'r1' });
    expect(await seriesAsJson(cells)).toEqual(await seriesAsJson(reference));
    // In the text, prom-client prints a histogram's own labels after the default ones; Prometheus reads a
    // series' labels as a set, so only the order differs.
    expect(await cells.metrics()).toContain('h_seconds_count{route="b",status="500",replica="r1"} 1');
    expect(await reference.metrics()).toContain('h_seconds_count{replica="r1",route="b",status="500"} 1');
  });

  test("the registry's reset clears every series", async () => {
    const { reference, cells, cellCounter, cellHistogram } = twoRegistries();
    for (const registry of [reference, cells]) registry.resetMetrics();
    expect(await cells.metrics()).toBe(await reference.metrics());
    cellCounter.labels('alpha', 'images', 'admitted').inc(2);
    cellHistogram.labels('a', '200').observe(0.5);
    const text = await cells.metrics();
    expect(text).toContain('c_total{tenant="alpha",limit="images",decision="admitted"} 2');
    expect(text).toContain('h_seconds_count{route="a",status="200"} 1');
  });
});

describe('cell metrics refuse what prom-client refuses', () => {
  const registers = [new Registry()];
  test('a counter that would go down or become infinite or NaN', () => {
    const counter = new CellCounter({ name: 'x_total', help: 'x', labelNames: ['a'] as const, registers });
    for (const amount of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => {
        counter.labels('a').inc(amount);
      }).toThrow(TypeError);
    }
  });

  test('a histogram observation that is not finite', () => {
    const histogram = new CellHistogram({
      name: 'y_seconds',
      help: 'y',
      labelNames: ['a'] as const,
      buckets: BUCKETS,
      registers,
    });
    expect(() => {
      histogram.labels('a').observe(Number.NaN);
    }).toThrow(TypeError);
  });

  test('label names outside Prometheus syntax, reserved ones, and le on a histogram', () => {
    for (const labelName of ['2xx', 'bad-name', '__reserved']) {
      expect(
        () =>
          new CellCounter({ name: `z_${labelName.length}`, help: 'z', labelNames: [labelName], registers }),
      ).toThrow(/invalid label name/);
    }
    expect(
      () =>
        new CellHistogram({ name: 'w_seconds', help: 'w', labelNames: ['le'], buckets: BUCKETS, registers }),
    ).toThrow(/le is the bucket label/);
  });
});

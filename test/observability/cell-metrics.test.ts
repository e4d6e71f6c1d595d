// Cell metrics must read exactly as prom-client's own Counter and Histogram would for the same updates:
// Prometheus, dashboards and alert rules cannot tell which one produced a series.
import { describe, expect, test } from 'vitest';
import { Counter, Histogram, Registry } from 'prom-client';
import { CellCounter, CellHistogram } from '../../src/observability/cell-metrics.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** Series name with its labels sorted → value: label order is not part of a series' identity. */
async function seriesOf(registry: Registry): Promise<Map<string, number>> {
  const series = new Map<string, number>();
  for (const line of (await registry.metrics()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([^{ ]+)(?:\{(.*)\})? (.+)$/.exec(line);
    if (match === null) throw new Error(`not a series line: ${line}`);
    const [, name, labels = '', value] = match;
    series.set(`${name}{${labels.split(',').sort().join(',')}}`, Number(value));
  }
  return series;
}

describe('cell metrics', () => {
  test('a histogram reads as prom-client reads it: bounds inclusive, cumulative, +Inf, _sum, _count', async () => {
    const reference = new Registry();
    const cells = new Registry();
    const definition = {
      name: 'h_seconds',
      help: 'h',
      labelNames: ['route', 'status'] as const,
      buckets: BUCKETS,
    };
    const promHistogram = new Histogram({ ...definition, registers: [reference] });
    const cellHistogram = new CellHistogram({ ...definition, registers: [cells] });
    // On each bound, between bounds, below the first, above the last, and a second label set.
    const observations: [string, number, number][] = [
      ['a', 200, 0.001],
      ['a', 200, 0.0005],
      ['a', 200, 0.05],
      ['a', 200, 0.1],
      ['a', 200, 1],
      ['a', 200, 7],
      ['b', 500, 0.02],
    ];
    for (const [route, status, value] of observations) {
      promHistogram.observe({ route, status }, value);
      cellHistogram.labels(route, status).observe(value);
    }
    const expected = await seriesOf(reference);
    expect(expected.get('h_seconds_bucket{le="0.1",route="a",status="200"}')).toBe(4);
    expect(await seriesOf(cells)).toEqual(expected);
    expect(await cells.metrics()).toContain('# TYPE h_seconds histogram');
  });

  test('a counter reads as prom-client reads it, amounts included', async () => {
    const reference = new Registry();
    const cells = new Registry();
    const definition = { name: 'c_total', help: 'c', labelNames: ['tenant', 'limit', 'decision'] as const };
    const promCounter = new Counter({ ...definition, registers: [reference] });
    const cellCounter = new CellCounter({ ...definition, registers: [cells] });
    const updates: [string, string, string, number][] = [
      ['alpha', 'images', 'admitted', 1],
      ['alpha', 'images', 'admitted', 3],
      ['alpha', 'requests', 'rate_limited', 1],
      ['beta', 'images', 'admitted', 0.5],
    ];
    for (const [tenant, limit, decision, amount] of updates) {
      promCounter.inc({ tenant, limit, decision }, amount);
      cellCounter.labels(tenant, limit, decision).inc(amount);
    }
    expect(await seriesOf(cells)).toEqual(await seriesOf(reference));
    expect(await cells.metrics()).toContain('# TYPE c_total counter');
  });

  test("the registry's reset clears the series, as it does for prom-client's metrics", async () => {
    const registry = new Registry();
    const counter = new CellCounter({
      name: 'r_total',
      help: 'r',
      labelNames: ['tenant'] as const,
      registers: [registry],
    });
    counter.labels('alpha').inc();
    registry.resetMetrics();
    expect(await seriesOf(registry)).toEqual(new Map());
    counter.labels('alpha').inc(2);
    expect(await seriesOf(registry)).toEqual(new Map([['r_total{tenant="alpha"}', 2]]));
  });
});

// Counters and histograms for the request path whose updates allocate nothing.
//
// prom-client's Counter and Histogram take a labels object on every update and hash it into a new string
// to find the series (lib/util.js, hashObject): two allocations and about 0.5 µs per update, and a request
// makes about ten. Here a series is a cell (a number, or a histogram's bucket counts) found through a tree
// of Maps keyed by the label values in order, so an update after the first allocates nothing and costs
// a few Map lookups. The cells are turned into series only when /metrics is scraped, through the same
// prom-client registry as every other metric (see defineCellMetric).
import type { Metric, MetricValueWithName, Registry } from 'prom-client';

type LabelValue = string | number;
/** One value per label name, in the order of the names. */
type LabelValues<Names extends readonly string[]> = { [Index in keyof Names]: LabelValue };
type LabelSet = Record<string, LabelValue>;

interface Definition<Names extends readonly string[]> {
  name: string;
  help: string;
  labelNames: Names;
  registers: readonly Registry[];
}

/** Up to four labels: the most any gengate metric has (gengate_http_requests_total). */
const MAX_LABELS = 4;

/** The cells of one metric, one per label set, in a tree of Maps keyed by the label values in order. */
class CellTree<Cell> {
  readonly #root = new Map<LabelValue, unknown>();
  readonly #depth: number;
  readonly #newCell: () => Cell;

  constructor(depth: number, newCell: () => Cell) {
    if (depth < 1 || depth > MAX_LABELS) throw new Error(`cell metrics take 1 to ${MAX_LABELS} labels`);
    this.#depth = depth;
    this.#newCell = newCell;
  }

  // Positional parameters, not a rest parameter: V8 allocates the array of a rest parameter on each call.
  cell(a: LabelValue, b?: LabelValue, c?: LabelValue, d?: LabelValue): Cell {
    switch (this.#depth) {
      case 1:
        return this.#leaf(this.#root, a);
      case 2:
        return this.#leaf(branch(this.#root, a), b);
      case 3:
        return this.#leaf(branch(branch(this.#root, a), b), c);
      default:
        return this.#leaf(branch(branch(branch(this.#root, a), b), c), d);
    }
  }

  #leaf(node: Map<LabelValue, unknown>, key: LabelValue | undefined): Cell {
    if (key === undefined) throw new Error('a label value is missing');
    let cell = node.get(key) as Cell | undefined;
    if (cell === undefined) node.set(key, (cell = this.#newCell()));
    return cell;
  }

  /** Every cell with its label values, in the order the label sets were first seen. */
  *entries(): Generator<[LabelValue[], Cell]> {
    function* walk(
      node: Map<LabelValue, unknown>,
      depth: number,
      path: LabelValue[],
    ): Generator<[LabelValue[], Cell]> {
      for (const [key, child] of node) {
        if (depth === 1) yield [[...path, key], child as Cell];
        else yield* walk(child as Map<LabelValue, unknown>, depth - 1, [...path, key]);
      }
    }
    yield* walk(this.#root, this.#depth, []);
  }

  clear(): void {
    this.#root.clear();
  }
}

function branch(node: Map<LabelValue, unknown>, key: LabelValue | undefined): Map<LabelValue, unknown> {
  if (key === undefined) throw new Error('a label value is missing');
  let child = node.get(key) as Map<LabelValue, unknown> | undefined;
  if (child === undefined) node.set(key, (child = new Map()));
  return child;
}

function labelSet(names: readonly string[], values: readonly LabelValue[]): LabelSet {
  return Object.fromEntries(names.map((name, index) => [name, values[index] ?? '']));
}

export class CounterCell {
  value = 0;

  inc(amount = 1): void {
    this.value += amount;
  }
}

export class HistogramCell {
  /** Observations per bucket, not cumulative: the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #upperBounds: readonly number[];

  constructor(upperBounds: readonly number[]) {
    this.#upperBounds = upperBounds;
    this.counts = new Float64Array(upperBounds.length + 1);
  }

  observe(value: number): void {
    // The first bound at or above the value (Prometheus' `le`), or the last slot when there is none.
    const bounds = this.#upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > (bounds[bucket] ?? Number.POSITIVE_INFINITY)) bucket++;
    this.counts[bucket] = (this.counts[bucket] ?? 0) + 1;
    this.sum += value;
    this.count++;
  }
}

type Series = MetricValueWithName<string>;

/**
 * Defines a metric whose series are cells and registers it with prom-client's registries, which read any
 * metric through its name, help, type, aggregator, get() and reset(), as they read their own classes.
 * Returns the lookup of a label set's cell.
 */
function defineCellMetric<Names extends readonly string[], Cell>(
  definition: Definition<Names>,
  type: 'counter' | 'histogram',
  newCell: () => Cell,
  seriesOf: (labels: LabelSet, cell: Cell) => Series[],
): (...values: LabelValues<Names>) => Cell {
  const { name, help, labelNames } = definition;
  const cells = new CellTree(labelNames.length, newCell);
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: () =>
      Promise.resolve({
        name,
        help,
        type,
        aggregator: 'sum',
        values: Array.from(cells.entries(), ([values, cell]) =>
          seriesOf(labelSet(labelNames, values), cell),
        ).flat(),
      }),
    reset: () => {
      cells.clear();
    },
  };
  for (const registry of definition.registers) registry.registerMetric(metric as unknown as Metric);
  return cells.cell.bind(cells) as unknown as (...values: LabelValues<Names>) => Cell;
}

export class CellCounter<Names extends readonly string[]> {
  /** The counter of one label set: `counter.labels(...).inc()`. */
  readonly labels: (...values: LabelValues<Names>) => CounterCell;

  constructor(definition: Definition<Names>) {
    this.labels = defineCellMetric(
      definition,
      'counter',
      () => new CounterCell(),
      (labels, cell) => [{ metricName: definition.name, labels, value: cell.value }],
    );
  }
}

export class CellHistogram<Names extends readonly string[]> {
  /** The histogram of one label set: `histogram.labels(...).observe(seconds)`. */
  readonly labels: (...values: LabelValues<Names>) => HistogramCell;

  constructor(definition: Definition<Names> & { buckets: readonly number[] }) {
    const upperBounds = [...definition.buckets].sort((a, b) => a - b);
    this.labels = defineCellMetric(
      definition,
      'histogram',
      () => new HistogramCell(upperBounds),
      (labels, cell) => histogramSeries(definition.name, upperBounds, labels, cell),
    );
  }
}

/** A histogram's series in Prometheus' form: cumulative buckets, then +Inf, _sum and _count. */
function histogramSeries(
  name: string,
  upperBounds: readonly number[],
  labels: LabelSet,
  cell: HistogramCell,
): Series[] {
  let cumulative = 0;
  const buckets = upperBounds.map((upperBound, index) => {
    cumulative += cell.counts[index] ?? 0;
    return { metricName: `${name}_bucket`, labels: { ...labels, le: upperBound }, value: cumulative };
  });
  return [
    ...buckets,
    { metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cell.count },
    { metricName: `${name}_sum`, labels, value: cell.sum },
    { metricName: `${name}_count`, labels, value: cell.count },
  ];
}

// Counters and histograms for the request path whose updates allocate nothing.
//
// prom-client's Counter and Histogram take a labels object on every update and hash it into a new string
// to find the series (lib/util.js, hashObject): two allocations and about 0.5 µs per update, and a request
// makes about ten. Here a series is a cell (a number, or a histogram's bucket counts) found through a tree
// of Maps keyed by the label values in order, so an update after the first allocates nothing and costs
// a few Map lookups. The cells are turned into series only when /metrics is scraped, through the same
// prom-client registry as every other metric, and read there exactly as prom-client's own would (see
// defineCellMetric and test/observability/cell-metrics.test.ts).
import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/** 1 to 4 label names: the most any gengate metric has is 4 (gengate_http_requests_total). */
type LabelNames =
  | readonly [string]
  | readonly [string, string]
  | readonly [string, string, string]
  | readonly [string, string, string, string];
/**
 * One value per label name, in the order of the names. Strings only: 200 and '200' would be two cells
 * that print as one series, which Prometheus rejects (a status goes through String(), whose result V8
 * caches for small integers).
 */
type LabelValues<Names extends LabelNames> = { [Index in keyof Names]: string };
type LabelSet = Record<string, string>;
type Series = MetricValueWithName<string>;

interface Definition<Names extends LabelNames> {
  name: string;
  help: string;
  labelNames: Names;
  registers: readonly Registry[];
}

// As prom-client checks them: Prometheus' label name syntax, names starting with __ are reserved.
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The cells of one metric, one per label set, in a tree of Maps keyed by the label values in order. */
class CellTree<Cell> {
  readonly #root = new Map<string, unknown>();
  readonly #depth: number;
  readonly #newCell: () => Cell;

  constructor(depth: number, newCell: () => Cell) {
    this.#depth = depth;
    this.#newCell = newCell;
  }

  // Positional parameters, not a rest parameter: V8 allocates the array of a rest parameter on each call.
  cell(a: string, b?: string, c?: string, d?: string): Cell {
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

  #leaf(node: Map<string, unknown>, key: string | undefined): Cell {
    if (key === undefined) throw new Error('a label value is missing');
    let cell = node.get(key) as Cell | undefined;
    if (cell === undefined) node.set(key, (cell = this.#newCell()));
    return cell;
  }

  /** Every cell with its label values, in the order the label sets were first seen. */
  *entries(): Generator<[string[], Cell]> {
    function* walk(node: Map<string, unknown>, depth: number, path: string[]): Generator<[string[], Cell]> {
      for (const [key, child] of node) {
        if (depth === 1) yield [[...path, key], child as Cell];
        else yield* walk(child as Map<string, unknown>, depth - 1, [...path, key]);
      }
    }
    yield* walk(this.#root, this.#depth, []);
  }

  clear(): void {
    this.#root.clear();
  }
}

function branch(node: Map<string, unknown>, key: string | undefined): Map<string, unknown> {
  if (key === undefined) throw new Error('a label value is missing');
  let child = node.get(key) as Map<string, unknown> | undefined;
  if (child === undefined) node.set(key, (child = new Map()));
  return child;
}

function labelSet(names: readonly string[], values: readonly string[]): LabelSet {
  // The tree is as deep as there are names, so every name has its value.
  return Object.fromEntries(names.map((name, index) => [name, values[index] ?? '']));
}

class CounterCell {
  value = 0;

  inc(amount = 1): void {
    // As prom-client: a counter never goes down, and one bad amount would spoil the series for good.
    if (!(amount >= 0 && amount < Number.POSITIVE_INFINITY)) {
      throw new TypeError(`a counter is increased by a finite amount of at least 0, not ${amount}`);
    }
    this.value += amount;
  }
}

class HistogramCell {
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
    if (!Number.isFinite(value)) throw new TypeError(`a histogram observes finite values, not ${value}`);
    // The first bound at or above the value (Prometheus' `le`), or the last slot when there is none.
    const bounds = this.#upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > (bounds[bucket] ?? Number.POSITIVE_INFINITY)) bucket++;
    this.counts[bucket] = (this.counts[bucket] ?? 0) + 1;
    this.sum += value;
    this.count++;
  }
}

/**
 * Defines a metric whose series are cells and registers it with prom-client's registries, which read any
 * metric through its name, help, type, aggregator, get() and reset(), as they read their own classes.
 * get() reads the name at each scrape: in OpenMetrics mode the registry renames a counter (it takes the
 * `_total` off, then puts it on every series). Returns the lookup of a label set's cell.
 */
function defineCellMetric<Names extends LabelNames, Cell>(
  definition: Definition<Names>,
  type: 'counter' | 'histogram',
  newCell: () => Cell,
  seriesOf: (name: string, labels: LabelSet, cell: Cell) => Series[],
): (...values: LabelValues<Names>) => Cell {
  const { labelNames } = definition;
  for (const labelName of labelNames) {
    if (!LABEL_NAME.test(labelName) || labelName.startsWith('__')) {
      throw new Error(`${definition.name}: invalid label name ${labelName}`);
    }
  }
  const cells = new CellTree(labelNames.length, newCell);
  const metric = {
    name: definition.name,
    help: definition.help,
    type,
    aggregator: 'sum',
    get: () =>
      Promise.resolve({
        name: metric.name,
        help: metric.help,
        type,
        aggregator: metric.aggregator,
        values: Array.from(cells.entries(), ([values, cell]) =>
          seriesOf(metric.name, labelSet(labelNames, values), cell),
        ).flat(),
      }),
    reset: () => {
      cells.clear();
    },
  };
  for (const registry of definition.registers) registry.registerMetric(metric as unknown as Metric);
  // cell() takes exactly one positional value per name, which is what LabelValues<Names> lists.
  return cells.cell.bind(cells) as unknown as (...values: LabelValues<Names>) => Cell;
}

export class CellCounter<Names extends LabelNames> {
  /** The counter of one label set: `counter.labels(...).inc()`. */
  readonly labels: (...values: LabelValues<Names>) => CounterCell;

  constructor(definition: Definition<Names>) {
    // No metricName: the registry names a counter's series itself (with `_total` in OpenMetrics mode).
    this.labels = defineCellMetric(
      definition,
      'counter',
      () => new CounterCell(),
      (_name, labels, cell) => [{ labels, value: cell.value }],
    );
  }
}

export class CellHistogram<Names extends LabelNames> {
  /** The histogram of one label set: `histogram.labels(...).observe(seconds)`. */
  readonly labels: (...values: LabelValues<Names>) => HistogramCell;

  constructor(definition: Definition<Names> & { buckets: readonly number[] }) {
    if (definition.labelNames.includes('le')) {
      throw new Error(`${definition.name}: le is the bucket label of a histogram, not a label of its own`);
    }
    const upperBounds = [...definition.buckets].sort((a, b) => a - b);
    this.labels = defineCellMetric(
      definition,
      'histogram',
      () => new HistogramCell(upperBounds),
      (name, labels, cell) => histogramSeries(name, upperBounds, labels, cell),
    );
  }
}

/** A histogram's series as prom-client gives them: cumulative buckets (`le` first), +Inf, _sum, _count. */
function histogramSeries(
  name: string,
  upperBounds: readonly number[],
  labels: LabelSet,
  cell: HistogramCell,
): Series[] {
  let cumulative = 0;
  const buckets = upperBounds.map((upperBound, index) => {
    cumulative += cell.counts[index] ?? 0;
    return { metricName: `${name}_bucket`, labels: { le: upperBound, ...labels }, value: cumulative };
  });
  return [
    ...buckets,
    { metricName: `${name}_bucket`, labels: { le: '+Inf', ...labels }, value: cell.count },
    { metricName: `${name}_sum`, labels, value: cell.sum },
    { metricName: `${name}_count`, labels, value: cell.count },
  ];
}

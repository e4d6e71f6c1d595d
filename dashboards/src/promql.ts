// PromQL shapes that recur across the dashboards, written once so that every panel aggregates the same way.
// Each returns plain PromQL: what a panel queries stays readable in the generated JSON.

/** Grafana's rate window: at least four scrape intervals, so a rate never misses its two samples. */
const RATE_WINDOW = '[$__rate_interval]';

/**
 * The release the dashboard shows, from its cluster, namespace and job variables (panels.ts): every
 * series a panel reads is selected by it, so that other services' series and other releases' never mix
 * in. Without a cluster label "All" (`.*`) matches the series too.
 */
export const RELEASE = 'cluster=~"$cluster", namespace="$namespace", job="$job"';

/** `metric{<release>, a, b}` from a metric name and more label matchers. */
export function select(metric: string, ...matchers: string[]): string {
  return `${metric}{${[RELEASE, ...matchers].join(', ')}}`;
}

/** `sum(inner)`, or `sum by (a, b) (inner)`. */
function sum(by: readonly string[], inner: string): string {
  return by.length === 0 ? `sum(${inner})` : `sum by (${by.join(', ')}) (${inner})`;
}

/** Per-second rate of a counter (or a histogram's `_count`) summed over the selected series, or per `by` labels. */
export function sumRate(selector: string, by: readonly string[] = []): string {
  return sum(by, `rate(${selector}${RATE_WINDOW})`);
}

/** How much a counter grew over the window, summed per `by` labels: for events that are rare and whole. */
export function sumIncrease(selector: string, window: string, by: readonly string[] = []): string {
  return sum(by, `increase(${selector}[${window}])`);
}

/** The `quantile` (0 to 1) of a histogram family over the selected series, per `by` labels. */
export function histogramQuantile(
  quantile: number,
  family: string,
  matchers: readonly string[],
  by: readonly string[] = [],
): string {
  const buckets = select(`${family}_bucket`, ...matchers);
  return `histogram_quantile(${quantile}, ${sum(['le', ...by], `rate(${buckets}${RATE_WINDOW})`)})`;
}

/**
 * The rate of the series that also match `subset`, per `by` labels, and 0 for every group that has the
 * counter but none of the subset yet (no 5xx so far, say): a healthy system draws a line at zero instead
 * of "No data".
 */
export function sumRateOrZero(
  metric: string,
  matchers: readonly string[],
  subset: string,
  by: readonly string[],
): string {
  const part = sumRate(select(metric, ...matchers, subset), by);
  return `${part} or ${sumRate(select(metric, ...matchers), by)} * 0`;
}

/** The share of a counter's rate that also matches `subset`, per `by` labels; 0 where none does. */
export function rateShare(
  metric: string,
  matchers: readonly string[],
  subset: string,
  by: readonly string[],
): string {
  const all = sumRate(select(metric, ...matchers), by);
  return `(${sumRateOrZero(metric, matchers, subset, by)}) / ${all}`;
}

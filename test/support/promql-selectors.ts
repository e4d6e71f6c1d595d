// The series an alert rule or a dashboard query reads, for the checks that every one of them is selected
// by the release's matchers: gengate's own metrics and the process metrics other services export under
// the same names (nodejs_*, process_*, up).
const SERIES_SELECTOR = /\b(gengate_\w+|nodejs_\w+|process_\w+|up)\b(?:\{([^}]*)\})?/g;

/** Each series selector of `expr` whose matchers do not include `matchers` (as written), as written. */
export function unselectedSeries(expr: string, matchers: string): string[] {
  return [...expr.matchAll(SERIES_SELECTOR)]
    .filter((match) => !(match[2] ?? '').includes(matchers))
    .map((match) => match[0]);
}

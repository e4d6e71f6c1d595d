import { expect, test } from 'vitest';
import { unselectedSeries } from './promql-selectors.ts';

test('names each series selector without the matchers, bare metric names included', () => {
  expect(
    unselectedSeries(
      'sum by (job) (rate(gengate_x_total{job="g", a="b"}[5m])) / process_open_fds + up{a="b"} or nodejs_y{job="g"}',
      'job="g"',
    ),
  ).toEqual(['process_open_fds', 'up{a="b"}']);
});

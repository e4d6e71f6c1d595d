// Helm reads only files inside the chart, so helm/gengate carries copies of the dashboards, the alert
// rules and the configuration's schema; they must never drift from their sources.
import { describe, expect, it } from 'vitest';
import { chartConfigSchema, outOfSyncChartFiles } from '../../scripts/sync-chart-files.ts';

describe("the chart's copies of its sources", () => {
  it('are identical to dashboards/*.json, prometheus/gengate.rules.yaml and src/config/schema.ts', async () => {
    expect(
      await outOfSyncChartFiles(),
      'out of sync: run `npm run chart:sync` and commit the result',
    ).toEqual([]);
  });

  it("leave optional in the chart's schema what gengate's loader defaults, as in the file gengate reads", () => {
    const schema = chartConfigSchema() as {
      required?: string[];
      properties: { tenants: { items: { required: string[] } } };
    };
    expect(schema.required).toBeUndefined();
    expect(schema.properties.tenants.items.required).toEqual(['id', 'credential', 'keys']);
  });
});

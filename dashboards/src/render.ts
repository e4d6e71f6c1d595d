// The generated files: each dashboard as stable two-space JSON under its file name in dashboards/.
// `npm run dashboards` writes them; a test renders them again and requires the committed bytes.
import type { Dataquery } from '@grafana/grafana-foundation-sdk/cog';
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import type * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import { healthDashboard } from './health.ts';
import { overviewDashboard } from './overview.ts';
import { tenantsDashboard } from './tenants.ts';

export const DASHBOARDS: Readonly<Record<string, () => Dashboard>> = {
  'gengate-overview.json': overviewDashboard,
  'gengate-tenants.json': tenantsDashboard,
  'gengate-health.json': healthDashboard,
};

/** File name to file text, in the order above. */
export function renderDashboards(): Map<string, string> {
  return new Map(
    Object.entries(DASHBOARDS).map(([file, build]) => [
      file,
      `${JSON.stringify(numbered(build()), null, 2)}\n`,
    ]),
  );
}

/**
 * Panel ids in layout order and query refIds A, B, … within each panel, which the builders leave to
 * Grafana: fixed here, links to a panel (`viewPanel=3`) and the committed JSON stay stable.
 */
function numbered(dashboard: Dashboard): Dashboard {
  for (const [index, panel] of (dashboard.panels ?? []).entries()) {
    panel.id = index + 1;
    if (!('targets' in panel)) continue;
    for (const [position, target] of (panel.targets ?? []).filter(isPrometheusQuery).entries()) {
      target.refId = String.fromCharCode('A'.charCodeAt(0) + position);
    }
  }
  return dashboard;
}

function isPrometheusQuery(query: Dataquery): query is prometheus.Dataquery {
  return 'expr' in query;
}

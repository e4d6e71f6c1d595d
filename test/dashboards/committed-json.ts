// The committed dashboard files as Grafana and the query checks read them: panels and their targets.
import { readFileSync } from 'node:fs';
import { DASHBOARDS } from '../../dashboards/src/render.ts';

export const DASHBOARD_DIR = new URL('../../dashboards/', import.meta.url);

export interface DashboardTarget {
  refId?: string;
  expr?: string;
  datasource?: { type?: string; uid?: string };
}

export interface DashboardPanel {
  id?: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: DashboardTarget[];
  links?: { title: string; type: string; url?: string }[];
}

export interface DashboardVariable {
  type: string;
  name: string;
  query?: string;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
  refresh?: number;
  datasource?: { type?: string; uid?: string };
}

export interface DashboardJson {
  uid: string;
  title: string;
  description: string;
  panels: DashboardPanel[];
  templating: { list: DashboardVariable[] };
}

export const DASHBOARD_FILES = Object.keys(DASHBOARDS);

export function readDashboard(file: string): DashboardJson {
  return JSON.parse(readFileSync(new URL(file, DASHBOARD_DIR), 'utf8')) as DashboardJson;
}

/** Every panel that shows data: rows only group the panels after them. */
export function dataPanels(dashboard: DashboardJson): DashboardPanel[] {
  return dashboard.panels.filter((panel) => panel.type !== 'row');
}

// What Grafana would ask Prometheus for each panel of the committed dashboards (dashboards/*.json), for
// the proof that every panel shows data. No Grafana server runs here, so the JSON is checked against the
// Grafana Foundation SDK's types as far as they go (the members they require, with their JSON types), and
// the variables are substituted the way Grafana's Prometheus data source does.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as grafana from '@grafana/grafana-foundation-sdk/dashboard';
import type { Panel, RowPanel, VariableModel } from '@grafana/grafana-foundation-sdk/dashboard';
import type { Dataquery } from '@grafana/grafana-foundation-sdk/prometheus';

/**
 * The classic dashboard model, which the committed JSON is: the SDK deprecates it for dashboardv2, which
 * file provisioning and the Grafana chart's sidecar do not read.
 */
// eslint-disable-next-line @typescript-eslint/no-deprecated
export type Dashboard = grafana.Dashboard;

/** A Prometheus target as it stands in the JSON (the SDK's type also declares a marker method). */
type PrometheusTarget = Omit<Dataquery, '_implementsDataqueryVariant'>;

export interface PanelQuery {
  dashboard: string;
  panel: string;
  refId: string;
  /** As written in the dashboard, variables and all. */
  expr: string;
  /** Grafana runs it at the end of the time range only (stat and table panels, say). */
  instant: boolean;
}

export interface DashboardFile {
  file: string;
  dashboard: Dashboard;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Where `json` departs from the SDK's Dashboard type in the members it requires (and in the title and
 * uid that provisioning needs), down to each Prometheus target's expr and refId.
 */
export function dashboardShapeProblems(json: unknown, file: string): string[] {
  if (!isObject(json)) return [`${file}: not a JSON object`];
  const problems: string[] = [];
  const expect = (holds: boolean, what: string) => {
    if (!holds) problems.push(`${file}: ${what}`);
  };
  expect(typeof json.title === 'string', 'title is not a string');
  expect(typeof json.uid === 'string', 'uid is not a string');
  expect(typeof json.schemaVersion === 'number', 'schemaVersion (required) is not a number');
  expect(isObject(json.annotations), 'annotations (required) is not an object');
  const templating = json.templating;
  expect(isObject(templating), 'templating (required) is not an object');
  const variables = isObject(templating) ? (templating.list ?? []) : [];
  expect(Array.isArray(variables), 'templating.list is not an array');
  for (const variable of Array.isArray(variables) ? (variables as unknown[]) : []) {
    const name = isObject(variable) ? variable.name : undefined;
    expect(isObject(variable) && typeof name === 'string', 'a variable has no name');
    expect(isObject(variable) && typeof variable.type === 'string', `variable ${String(name)} has no type`);
  }
  expect(Array.isArray(json.panels), 'panels is not an array');
  const panels = Array.isArray(json.panels) ? (json.panels as unknown[]) : [];
  const checkPanel = (panel: unknown, where: string) => {
    if (!isObject(panel) || typeof panel.type !== 'string') {
      problems.push(`${file}: ${where} has no type`);
      return;
    }
    const title = `panel "${String(panel.title)}"`;
    if (panel.type === 'row') {
      expect(typeof panel.collapsed === 'boolean', `row ${title}: collapsed (required) is not a boolean`);
      expect(typeof panel.id === 'number', `row ${title}: id (required) is not a number`);
      expect(Array.isArray(panel.panels), `row ${title}: panels (required) is not an array`);
      const inner = Array.isArray(panel.panels) ? (panel.panels as unknown[]) : [];
      inner.forEach((child, index) => {
        checkPanel(child, `${where}, its panel ${index}`);
      });
      return;
    }
    expect(typeof panel.title === 'string', `${where}: title is not a string`);
    const targets = panel.targets ?? [];
    expect(Array.isArray(targets), `${title}: targets is not an array`);
    for (const target of Array.isArray(targets) ? (targets as unknown[]) : []) {
      expect(isObject(target) && typeof target.expr === 'string', `${title}: a target has no expr`);
      expect(isObject(target) && typeof target.refId === 'string', `${title}: a target has no refId`);
    }
  };
  panels.forEach((panel, index) => {
    checkPanel(panel, `panel ${index}`);
  });
  return problems;
}

/** Every dashboards/*.json, parsed; throws listing every shape problem at once. */
export async function readDashboards(dir: string): Promise<DashboardFile[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  const read = await Promise.all(
    files.map(async (file) => ({
      file,
      json: JSON.parse(await readFile(join(dir, file), 'utf8')) as unknown,
    })),
  );
  const problems = read.flatMap(({ file, json }) => dashboardShapeProblems(json, file));
  if (problems.length > 0) throw new Error(`dashboards that are not Grafana JSON:\n${problems.join('\n')}`);
  return read.map(({ file, json }) => ({ file, dashboard: json as Dashboard }));
}

function isRow(panel: Panel | RowPanel): panel is RowPanel {
  return panel.type === 'row';
}

/** Every Prometheus target of every panel, rows' panels included (collapsed or not). */
export function panelQueries({ file, dashboard }: DashboardFile): PanelQuery[] {
  const panels = (dashboard.panels ?? []).flatMap((panel) => (isRow(panel) ? panel.panels : [panel]));
  return panels.flatMap((panel) =>
    ((panel.targets ?? []) as unknown as PrometheusTarget[]).map((target) => ({
      dashboard: file,
      panel: panel.title ?? '',
      refId: target.refId ?? '',
      expr: target.expr,
      instant: target.instant === true && target.range !== true,
    })),
  );
}

/** The label a `label_values(...)` variable lists, and the series selector it filters by, if any. */
export function labelValuesQuery(variable: VariableModel): { label: string; match?: string } {
  const query = isObject(variable.query) ? variable.query.query : variable.query;
  const found = /^\s*label_values\(\s*(?:(.+),\s*)?(\w+)\s*\)\s*$/.exec(String(query));
  if (found === null)
    throw new Error(`variable ${variable.name}: not a label_values query: ${String(query)}`);
  return found[1] === undefined ? { label: found[2]! } : { label: found[2]!, match: found[1] };
}

/** The values of `variable` that its `regex` keeps (Grafana: the first capture group if there is one). */
export function filterVariableValues(variable: VariableModel, values: readonly string[]): string[] {
  const regex = /^\/(.*)\/([a-z]*)$/s.exec(variable.regex ?? '');
  if (regex === null) return [...values];
  const pattern = new RegExp(regex[1]!, regex[2]);
  return values.flatMap((value) => {
    const match = pattern.exec(value);
    return match === null ? [] : [match[1] ?? value];
  });
}

// Grafana's Prometheus data source escapes regular-expression characters in values, doubling the
// backslash for the PromQL string it lands in.
function escapeRegexValue(value: string): string {
  return value.replace(/[\\^$*+?.()|{}[\]]/g, '\\\\$&');
}

/**
 * What Grafana puts for a multi-value or "All" variable: its allValue when it has one, otherwise every
 * value, escaped, as one alternation.
 */
export function allValueOf(variable: VariableModel, values: readonly string[]): string {
  if (variable.allValue !== undefined && variable.allValue !== '') return variable.allValue;
  const escaped = values.map(escapeRegexValue);
  return escaped.length === 1 ? escaped[0]! : `(${escaped.join('|')})`;
}

/** `expr` with every `$name`, `${name}`, `${name:format}` and `[[name]]` replaced; unknown names throw. */
export function interpolate(expr: string, values: ReadonlyMap<string, string>): string {
  return expr.replace(
    /\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)/g,
    (text, braced?: string, bracketed?: string, bare?: string) => {
      const name = braced ?? bracketed ?? bare ?? '';
      const value = values.get(name);
      if (value === undefined) throw new Error(`no value for ${text} in ${expr}`);
      return value;
    },
  );
}

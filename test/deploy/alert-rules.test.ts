// The alert rules (docs/operations.md#alerts): promtool accepts the file and its unit tests pass, and every
// alert carries what an operator paged at night needs: a summary, a description and a runbook link that
// lands on its own section of docs/operations.md. Every alert reads one release's series only and
// aggregates by (namespace, job): the repository's file by its default selector, and the PrometheusRule
// the chart renders from each ci/ value set by the release's, which promtool checks and unit-tests too.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { unselectedSeries } from '../support/promql-selectors.ts';
import { CI_VALUE_SETS, findManifest, render, valuesFile } from './support/helm.ts';

const execFileAsync = promisify(execFile);

const RULES_PATH = 'prometheus/gengate.rules.yaml';
const RULE_TESTS_PATH = 'prometheus/gengate.rules.test.yaml';
const OPERATIONS_DOC_PATH = 'docs/operations.md';
const RUNBOOK_BASE_URL = 'https://github.com/gengate/gengate/blob/main/docs/operations.md#';

const DEFAULT_SELECTOR = 'job="gengate"';
const DEFAULT_AGGREGATION = 'namespace, job';
// The release the rule tests page, and what the chart calls it (test/deploy/support/helm.ts renders
// release prod in namespace gateways).
const TESTED_RELEASE = { namespace: 'production', job: 'gengate' };

interface AlertingRule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface RuleGroups {
  groups: { name: string; rules: AlertingRule[] }[];
}

interface ExpectedAlert {
  exp_labels: Record<string, string>;
  exp_annotations: Record<string, string>;
}

interface RuleTests {
  rule_files: string[];
  tests: {
    input_series: { series: string; values: string }[];
    alert_rule_test?: { alertname: string; exp_alerts: ExpectedAlert[] }[];
  }[];
}

async function alertingRules(): Promise<AlertingRule[]> {
  const file = parse(await readFile(RULES_PATH, 'utf8')) as RuleGroups;
  return file.groups.flatMap((group) => group.rules);
}

/** Where an alert reads a series without `selector`, or aggregates other than by `aggregation` first. */
function selectionProblems(rules: readonly AlertingRule[], selector: string, aggregation: string): string[] {
  return rules.flatMap(({ alert, expr }) => [
    ...unselectedSeries(expr, selector).map((series) => `${alert}: reads ${series}`),
    ...[...expr.matchAll(/\b(by|on) \(([^)]*)\)/g)]
      .filter((clause) => !`${clause[2]}, `.startsWith(`${aggregation}, `))
      .map((clause) => `${alert}: aggregates ${clause[0]}`),
  ]);
}

/** The anchors GitHub gives the Markdown headings of `markdown` (lower case, punctuation dropped). */
function headingAnchors(markdown: string): Set<string> {
  const headings = markdown.split('\n').filter((line) => /^#{1,6} /.test(line));
  return new Set(
    headings.map((line) =>
      line
        .replace(/^#+ /, '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('alert rules', () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await execFileAsync('promtool', ['check', 'rules', RULES_PATH]);
    const alerts = await alertingRules();
    expect(stdout).toBe(`Checking ${RULES_PATH}\n  SUCCESS: ${alerts.length} rules found\n\n`);
  });

  it('pass their promtool unit tests', async () => {
    const { stdout } = await execFileAsync('promtool', ['test', 'rules', RULE_TESTS_PATH]);
    expect(stdout).toBe(`Unit Testing:  ${RULE_TESTS_PATH}\n  SUCCESS\n\n`);
  });

  it('read every series through the default selector and aggregate by (namespace, job) first', async () => {
    const alerts = await alertingRules();
    expect(selectionProblems(alerts, DEFAULT_SELECTOR, DEFAULT_AGGREGATION)).toEqual([]);
    // The chart rewrites these two texts (helm/gengate/templates/_monitoring.tpl): nothing but the
    // expressions may hold them, and every alert aggregates (absent_over_time's labels come from the
    // selector).
    for (const { alert, labels, annotations } of alerts) {
      expect(JSON.stringify({ labels, annotations }), alert).not.toMatch(/job="gengate"|namespace, job/);
    }
  });

  it('each have a unit test in which they fire', async () => {
    const tests = parse(await readFile(RULE_TESTS_PATH, 'utf8')) as RuleTests;
    const firedInTests = new Set(
      tests.tests.flatMap((test) =>
        (test.alert_rule_test ?? [])
          .filter((check) => check.exp_alerts.length > 0)
          .map((check) => check.alertname),
      ),
    );
    const alerts = await alertingRules();
    expect(alerts.map((rule) => rule.alert).filter((name) => !firedInTests.has(name))).toEqual([]);
  });

  it('each have a Gengate name, a severity, a summary, a description and a runbook section', async () => {
    const anchors = headingAnchors(await readFile(OPERATIONS_DOC_PATH, 'utf8'));
    const alerts = await alertingRules();
    const problems = alerts.flatMap(({ alert, labels = {}, annotations = {} }) => {
      const runbook = annotations.runbook_url ?? '';
      const anchor = runbook.startsWith(RUNBOOK_BASE_URL) ? runbook.slice(RUNBOOK_BASE_URL.length) : '';
      return [
        /^Gengate[A-Z]\w+$/.test(alert) ? [] : [`${alert}: name does not start with Gengate`],
        ['critical', 'warning'].includes(labels.severity ?? '') ? [] : [`${alert}: severity`],
        annotations.summary ? [] : [`${alert}: no summary`],
        annotations.description ? [] : [`${alert}: no description`],
        anchor === alert.toLowerCase()
          ? []
          : [`${alert}: runbook_url is ${runbook}, not ${RUNBOOK_BASE_URL}${alert.toLowerCase()}`],
        anchors.has(anchor) ? [] : [`${alert}: no heading in ${OPERATIONS_DOC_PATH} for #${anchor}`],
      ].flat();
    });
    expect(problems).toEqual([]);
    expect(new Set(alerts.map((rule) => rule.alert)).size).toBe(alerts.length);
  });
});

describe('the PrometheusRule the chart renders from each ci/ value set', () => {
  const scratch = mkdtemp(path.join(tmpdir(), 'gengate-chart-rules-'));
  afterAll(async () => {
    await rm(await scratch, { recursive: true, force: true });
  });

  it.each(CI_VALUE_SETS)('%s: selects its release, passes promtool and the rule unit tests', async (set) => {
    const manifests = render([...valuesFile(set), '--set', 'metrics.prometheusRule.enabled=true']);
    const values = parse(await readFile(`helm/gengate/ci/${set}`, 'utf8')) as {
      metrics?: { aggregationLabels?: string[]; runbookBaseUrl?: string };
    };
    const rule = findManifest(manifests, 'PrometheusRule') as unknown as { spec: RuleGroups };
    // The job the ServiceMonitor's scrape gives: the metrics Service's name.
    const service = manifests.find(
      (manifest) => manifest.kind === 'Service' && manifest.metadata.name.endsWith('-metrics'),
    )!;
    const release = { namespace: service.metadata.namespace!, job: service.metadata.name };
    const selector = `namespace="${release.namespace}", job="${release.job}"`;
    const aggregation = ['namespace', 'job', ...(values.metrics?.aggregationLabels ?? [])].join(', ');
    const runbookBase =
      values.metrics?.runbookBaseUrl ?? 'https://github.com/gengate/gengate/blob/main/docs/operations.md';

    const rules = rule.spec.groups.flatMap((group) => group.rules);
    expect(rules.map((each) => each.alert)).toEqual((await alertingRules()).map((each) => each.alert));
    expect(selectionProblems(rules, selector, aggregation)).toEqual([]);
    for (const { alert, annotations } of rules) {
      expect(annotations?.runbook_url).toBe(`${runbookBase}#${alert.toLowerCase()}`);
    }

    // The rewrite docs/operations.md gives for the repository's file outside the chart gives the same.
    const { stdout: rewritten } = await execFileAsync('sed', [
      '-e',
      `s/${DEFAULT_SELECTOR}/${selector}/g`,
      '-e',
      `s/${DEFAULT_AGGREGATION}/${aggregation}/g`,
      '-e',
      `s|${RUNBOOK_BASE_URL}|${runbookBase}#|`,
      RULES_PATH,
    ]);
    expect((parse(rewritten) as RuleGroups).groups).toEqual(rule.spec.groups);

    const dir = await mkdtemp(path.join(await scratch, `${set}-`));
    const rulesFile = path.join(dir, 'rules.yaml');
    await writeFile(rulesFile, stringify({ groups: rule.spec.groups }));
    const { stdout: checked } = await execFileAsync('promtool', ['check', 'rules', rulesFile]);
    expect(checked).toBe(`Checking ${rulesFile}\n  SUCCESS: ${rules.length} rules found\n\n`);

    const testsFile = path.join(dir, 'rules.test.yaml');
    const tests = parse(await readFile(RULE_TESTS_PATH, 'utf8')) as RuleTests;
    await writeFile(testsFile, stringify(forRelease(tests, 'rules.yaml', release, runbookBase)));
    const { stdout: tested } = await execFileAsync('promtool', ['test', 'rules', testsFile]);
    expect(tested).toBe(`Unit Testing:  ${testsFile}\n  SUCCESS\n\n`);
  });
});

/**
 * The repository's rule tests for the chart's release: the tested release production/gengate becomes
 * the chart's namespace and job, in its series and in the alerts expected of it; the alerts expected of
 * releases in other namespaces are not expected, since the chart selects its own namespace only; an
 * alert of the default selector without a namespace (absent_over_time's) carries the chart's, which its
 * selector fixes; runbook links take the chart's base.
 */
function forRelease(
  tests: RuleTests,
  rulesFile: string,
  release: { namespace: string; job: string },
  runbookBase: string,
): RuleTests {
  const testedSeries = `namespace="${TESTED_RELEASE.namespace}",job="${TESTED_RELEASE.job}"`;
  const isTested = (labels: Record<string, string>) =>
    labels.job === TESTED_RELEASE.job && [undefined, TESTED_RELEASE.namespace].includes(labels.namespace);
  return {
    ...tests,
    rule_files: [rulesFile],
    tests: tests.tests.map((test) => ({
      ...test,
      input_series: test.input_series.map((input) => ({
        ...input,
        series: input.series.replace(testedSeries, `namespace="${release.namespace}",job="${release.job}"`),
      })),
      alert_rule_test: test.alert_rule_test?.map((check) => ({
        ...check,
        exp_alerts: check.exp_alerts
          .filter((expected) => isTested(expected.exp_labels))
          .map(({ exp_labels, exp_annotations }) => ({
            exp_labels: { ...exp_labels, ...release },
            exp_annotations: {
              ...exp_annotations,
              description: exp_annotations.description!.replace(
                `${TESTED_RELEASE.namespace}/${TESTED_RELEASE.job}`,
                `${release.namespace}/${release.job}`,
              ),
              runbook_url: `${runbookBase}#${exp_annotations.runbook_url!.split('#')[1]}`,
            },
          })),
      })),
    })),
  };
}

// The alert rules (contract section 11): promtool accepts the file and its unit tests pass, and every
// alert carries what an operator paged at night needs: a summary, a description and a runbook link that
// lands on its own section of docs/operations.md.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const execFileAsync = promisify(execFile);

const RULES_PATH = 'prometheus/gengate.rules.yaml';
const RULE_TESTS_PATH = 'prometheus/gengate.rules.test.yaml';
const OPERATIONS_DOC_PATH = 'docs/operations.md';
const RUNBOOK_BASE_URL = 'https://github.com/gengate/gengate/blob/main/docs/operations.md#';

interface AlertingRule {
  alert: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface RuleTests {
  tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

async function alertingRules(): Promise<AlertingRule[]> {
  const file = parse(await readFile(RULES_PATH, 'utf8')) as { groups: { rules: AlertingRule[] }[] };
  return file.groups.flatMap((group) => group.rules);
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

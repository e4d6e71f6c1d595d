// Each fault file's findings, per scenario: how many requests were answered with what and how fast,
// printed as a table when the file ends and written to test/faults/results/<file>.json (git-ignored).
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { answerOf, summarise, type LoadRun, type Outcome, type OutcomeSummary } from './load.ts';

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

// The slowest answers of a scenario, with when they were sent: enough to place them on the fault's timeline.
const SLOWEST_KEPT = 5;

export interface ScenarioFinding extends OutcomeSummary {
  scenario: string;
  slowest: { sentAtMs: number; latencyMs: number; answer: string }[];
  latencyBySecond: { second: number; p50Ms: number; maxMs: number }[];
  generatorMaxStallMs: number;
  /** Figures particular to the scenario (retries after recovery, file descriptors, …). */
  notes?: Record<string, unknown>;
}

const MILLISECONDS_PER_SECOND = 1_000;

/** p50 and max latency of the requests sent in each second of the run: where on the timeline time went. */
function latencyBySecond(outcomes: readonly Outcome[]): { second: number; p50Ms: number; maxMs: number }[] {
  const bySecond = new Map<number, Outcome[]>();
  for (const outcome of outcomes) {
    const second = Math.floor(outcome.sentAtMs / MILLISECONDS_PER_SECOND);
    bySecond.set(second, [...(bySecond.get(second) ?? []), outcome]);
  }
  return [...bySecond.entries()]
    .sort(([a], [b]) => a - b)
    .map(([second, sent]) => {
      const summary = summarise(sent);
      return { second, p50Ms: Math.round(summary.p50Ms), maxMs: Math.round(summary.maxMs) };
    });
}

function fixed(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '-';
}

export function formatFindings(findings: readonly ScenarioFinding[]): string {
  const header = [
    'scenario',
    'requests',
    'answered with',
    'p50 ms',
    'p99 ms',
    'max ms',
    'generator stall ms',
  ];
  const rows = findings.map((finding) => [
    finding.scenario,
    String(finding.requests),
    Object.entries(finding.answers)
      .sort(([, a], [, b]) => b - a)
      .map(([answer, count]) => `${answer}: ${count}`)
      .join(', '),
    fixed(finding.p50Ms),
    fixed(finding.p99Ms),
    fixed(finding.maxMs),
    fixed(finding.generatorMaxStallMs),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ');
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

export interface FaultReport {
  /** Records a scenario's outcomes; returns the summary for the test's own assertions. */
  add(scenario: string, run: LoadRun, notes?: Record<string, unknown>): ScenarioFinding;
  /** Records figures that are not about requests (descriptors, memory), printed after the table. */
  note(name: string, figures: unknown): void;
  /** Prints the table and writes the JSON file. */
  write(): void;
}

export function createFaultReport(suite: string): FaultReport {
  const findings: ScenarioFinding[] = [];
  const notes: Record<string, unknown> = {};
  return {
    note(name, figures) {
      notes[name] = figures;
    },
    add(scenario, { outcomes, generatorMaxStallMs }, notes) {
      const finding = {
        scenario,
        ...summarise(outcomes),
        generatorMaxStallMs: Math.round(generatorMaxStallMs),
        latencyBySecond: latencyBySecond(outcomes),
        slowest: [...outcomes]
          .sort((a, b) => b.latencyMs - a.latencyMs)
          .slice(0, SLOWEST_KEPT)
          .map((outcome) => ({
            sentAtMs: Math.round(outcome.sentAtMs),
            latencyMs: Math.round(outcome.latencyMs),
            answer: answerOf(outcome),
          })),
        ...(notes === undefined ? {} : { notes }),
      };
      findings.push(finding);
      return finding;
    },
    write() {
      if (findings.length === 0 && Object.keys(notes).length === 0) return;
      const noteLines = Object.entries(notes).map(
        ([name, figures]) => `${name}: ${JSON.stringify(figures)}\n`,
      );
      process.stdout.write(`\nfaults: ${suite}\n${formatFindings(findings)}\n${noteLines.join('')}`);
      mkdirSync(RESULTS_DIR, { recursive: true });
      writeFileSync(
        `${RESULTS_DIR}${suite}.json`,
        `${JSON.stringify({ suite, at: new Date().toISOString(), findings, notes }, null, 2)}\n`,
      );
    },
  };
}

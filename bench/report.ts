// Medians over rounds, the ratios the performance issue sets targets for, and the printed tables.
import type { Allocation } from './allocation.ts';
import { median, type Measurement } from './measure.ts';

export interface TargetSummary {
  id: string;
  label: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  peakRssMb: number;
  cpuMicrosecondsPerRequest: number;
  /** Summed over rounds: anything but 0 makes the row suspect. */
  failures: number;
  rounds: Measurement[];
}

export function summarise(id: string, label: string, rounds: Measurement[]): TargetSummary {
  const medianOf = (pick: (round: Measurement) => number) => median(rounds.map(pick));
  return {
    id,
    label,
    requestsPerSecond: medianOf((round) => round.requestsPerSecond),
    p50Ms: medianOf((round) => round.p50Ms),
    p99Ms: medianOf((round) => round.p99Ms),
    p999Ms: medianOf((round) => round.p999Ms),
    peakRssMb: medianOf((round) => round.peakRssMb),
    cpuMicrosecondsPerRequest: medianOf((round) => round.cpuMicrosecondsPerRequest),
    failures: rounds.reduce((total, round) => total + round.failures, 0),
    rounds,
  };
}

/**
 * `pick(a) / pick(b)` in each round, both measured in that round: the VM's drift between rounds cancels
 * out of each ratio, which a ratio of the two medians keeps.
 */
export function ratiosPerRound(
  a: TargetSummary | undefined,
  b: TargetSummary | undefined,
  pick: (round: Measurement, index: number) => number,
): number[] {
  if (a === undefined || b === undefined) return [];
  return a.rounds.map((round, index) => {
    const other = b.rounds[index];
    return other === undefined ? Number.NaN : pick(round, index) / pick(other, index);
  });
}

/** This build over another (--against), each figure round by round and the median of those ratios. */
export interface BuildComparison {
  against: string;
  commit: string;
  perRound: Record<ComparedFigure, number[]>;
  medians: Record<ComparedFigure, number>;
  /** From the allocation step, after the rounds: one measurement of each build. */
  allocatedPerRequest: number;
}

interface ComparedBuild {
  throughput: TargetSummary;
  fixedRate: TargetSummary;
  allocation: Allocation | undefined;
}

type ComparedFigure = 'cpuPerRequest' | 'requestsPerSecond' | 'addedP99Ms' | 'peakRssMb';

const COMPARED_FIGURES: Record<ComparedFigure, string> = {
  cpuPerRequest: 'CPU µs/request, full load',
  requestsPerSecond: 'req/s, full load',
  addedP99Ms: 'added p99 ms, fixed rate',
  peakRssMb: 'peak RSS MB, full load',
};

/**
 * Each build measured in the same rounds, so each ratio pairs two runs minutes apart at most. Added p99
 * subtracts the direct call's p99 of the same round from each build's.
 */
export function compareBuilds(
  build: { against: string; commit: string },
  current: ComparedBuild,
  other: ComparedBuild,
  directFixedRate: TargetSummary | undefined,
): BuildComparison {
  const directP99 = (index: number) => directFixedRate?.rounds[index]?.p99Ms ?? Number.NaN;
  const perRound: Record<ComparedFigure, number[]> = {
    cpuPerRequest: ratiosPerRound(
      current.throughput,
      other.throughput,
      (round) => round.cpuMicrosecondsPerRequest,
    ),
    requestsPerSecond: ratiosPerRound(
      current.throughput,
      other.throughput,
      (round) => round.requestsPerSecond,
    ),
    addedP99Ms: ratiosPerRound(
      current.fixedRate,
      other.fixedRate,
      (round, index) => round.p99Ms - directP99(index),
    ),
    peakRssMb: ratiosPerRound(current.throughput, other.throughput, (round) => round.peakRssMb),
  };
  const medians = Object.fromEntries(
    Object.entries(perRound).map(([figure, ratios]) => [figure, median(ratios)]),
  ) as Record<ComparedFigure, number>;
  const allocatedPerRequest =
    (current.allocation?.bytesPerRequest ?? Number.NaN) / (other.allocation?.bytesPerRequest ?? Number.NaN);
  return { ...build, perRound, medians, allocatedPerRequest };
}

export function buildComparisonTable(comparison: BuildComparison): string {
  const rounds = comparison.perRound.cpuPerRequest.length;
  return formatTable(
    [
      'this build / the other',
      ...Array.from({ length: rounds }, (_, index) => `round ${index + 1}`),
      'median',
    ],
    (Object.keys(COMPARED_FIGURES) as ComparedFigure[]).map((figure) => [
      COMPARED_FIGURES[figure],
      ...comparison.perRound[figure].map((ratio) => fixed(ratio, 3)),
      fixed(comparison.medians[figure], 3),
    ]),
  );
}

/** Columns padded to their widest cell; the first left-aligned, the others right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

export const fixed = (value: number, digits: number): string =>
  Number.isFinite(value) ? value.toFixed(digits) : 'n/a';

export function throughputTable(summaries: readonly TargetSummary[]): string {
  return formatTable(
    ['target', 'req/s', 'CPU µs/req', 'p50 ms', 'p99 ms', 'p99.9 ms', 'RSS MB', 'failures'],
    summaries.map((row) => [
      row.label,
      fixed(row.requestsPerSecond, 0),
      fixed(row.cpuMicrosecondsPerRequest, 1),
      fixed(row.p50Ms, 3),
      fixed(row.p99Ms, 3),
      fixed(row.p999Ms, 3),
      fixed(row.peakRssMb, 1),
      String(row.failures),
    ]),
  );
}

export function fixedRateTable(summaries: readonly TargetSummary[], directP99Ms: number): string {
  return formatTable(
    ['target', 'achieved/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'added p99 ms', 'failures'],
    summaries.map((row) => [
      row.label,
      fixed(row.requestsPerSecond, 0),
      fixed(row.p50Ms, 3),
      fixed(row.p99Ms, 3),
      fixed(row.p999Ms, 3),
      row.id === 'direct' ? '-' : fixed(row.p99Ms - directP99Ms, 3),
      String(row.failures),
    ]),
  );
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
}

export function checkTargets(figures: {
  gengateOverBare: number;
  /** gengate's CPU per request over the floor's (Fastify + undici forward), at full load and at the fixed rate. */
  cpuOverFloorAtFullLoad: number;
  cpuOverFloorAtFixedRate: number;
  gengateAddedP99Ms: number;
  floorAddedP99Ms: number;
  gengatePeakRssMb: number;
  gengateAllocatedKbPerRequest: number;
  storeRoundTripsWaitedPerRequest: number;
}): TargetCheck[] {
  const ratio = (value: number) => fixed(value, 2);
  return [
    {
      target: 'CPU per request at the fixed rate <= 1.8 x the floor',
      measured: ratio(figures.cpuOverFloorAtFixedRate),
      met: figures.cpuOverFloorAtFixedRate <= 1.8,
    },
    {
      target: 'CPU per request at full load <= 1.8 x the floor',
      measured: ratio(figures.cpuOverFloorAtFullLoad),
      met: figures.cpuOverFloorAtFullLoad <= 1.8,
    },
    {
      target: 'gengate / bare-proxy req/s >= 1.3',
      measured: ratio(figures.gengateOverBare),
      met: figures.gengateOverBare >= 1.3,
    },
    {
      target: "added p99 at the fixed rate <= 1.5 ms and <= the floor's + 1 ms",
      measured: `${fixed(figures.gengateAddedP99Ms, 3)} ms (floor ${fixed(figures.floorAddedP99Ms, 3)} ms)`,
      met: figures.gengateAddedP99Ms <= 1.5 && figures.gengateAddedP99Ms <= figures.floorAddedP99Ms + 1,
    },
    {
      target: 'peak RSS under load <= 160 MB',
      measured: `${fixed(figures.gengatePeakRssMb, 1)} MB`,
      met: figures.gengatePeakRssMb <= 160,
    },
    {
      target: 'allocated per request <= 30 KB',
      measured: `${fixed(figures.gengateAllocatedKbPerRequest, 1)} KB`,
      met: figures.gengateAllocatedKbPerRequest <= 30,
    },
    {
      target: 'one store round trip per create on its path',
      measured: fixed(figures.storeRoundTripsWaitedPerRequest, 2),
      // Within a tenth of a round trip: loopback jitter is far below the relay's delay.
      met: Math.abs(figures.storeRoundTripsWaitedPerRequest - 1) < 0.1,
    },
  ];
}

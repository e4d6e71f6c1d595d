// A long run: gengate under full load for the soak's length, its RSS, V8 heap, open file descriptors and
// event-loop lag sampled at a fixed interval. The first third is warm-up (the heap grows to its working
// size in a minute or two); each figure's growth compares the median of the two halves of the rest, which
// a sawtooth heap does not fool, and the soak is flat when every growth stays within its tolerance.
import { readdirSync } from 'node:fs';
import { runLoad, type LoadSpec } from './load.ts';
import { BYTES_PER_MEGABYTE, median } from './measure.ts';
import { rssBytes } from './processes.ts';

const WARMUP_FRACTION = 1 / 3;
const MILLISECONDS_PER_SECOND = 1_000;
const SECONDS_PER_MINUTE = 60;

/**
 * How much a figure may grow between the halves of the settled run and still count as flat: an absolute
 * allowance (noise at small values) or a share of the earlier half, whichever is larger. A leak of one
 * socket or a few KB per request exceeds these within minutes at the soak's rate.
 */
const FLAT_TOLERANCES = {
  rssMb: { absolute: 10, relative: 0.05 },
  heapUsedMb: { absolute: 10, relative: 0.1 },
  openFds: { absolute: 5, relative: 0 },
  // Lag p99 wobbles with the machine; a saturated loop shows tens of milliseconds more, not a few.
  eventLoopLagP99Ms: { absolute: 5, relative: 0.5 },
} as const;

type SampledFigure = keyof typeof FLAT_TOLERANCES;

export interface SoakSample {
  atSeconds: number;
  rssMb: number;
  heapUsedMb: number;
  openFds: number;
  eventLoopLagP99Ms: number;
}

export interface Flatness {
  figure: SampledFigure;
  /** Medians of the first and second half of the samples after warm-up. */
  earlier: number;
  later: number;
  growth: number;
  tolerance: number;
  flat: boolean;
}

export interface SoakResult {
  seconds: number;
  requestsPerSecond: number;
  failures: number;
  samples: SoakSample[];
  rssSlopeMbPerMinute: number;
  flatness: Flatness[];
  flat: boolean;
}

const METRIC_LINES = {
  heapUsedBytes: /^nodejs_heap_size_used_bytes (\S+)$/m,
  eventLoopLagP99Seconds: /^nodejs_eventloop_lag_p99_seconds (\S+)$/m,
};

async function adminMetrics(adminPort: number): Promise<{ heapUsedMb: number; eventLoopLagP99Ms: number }> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const value = (line: RegExp) => Number(line.exec(text)?.[1] ?? Number.NaN);
    return {
      heapUsedMb: value(METRIC_LINES.heapUsedBytes) / BYTES_PER_MEGABYTE,
      eventLoopLagP99Ms: value(METRIC_LINES.eventLoopLagP99Seconds) * MILLISECONDS_PER_SECOND,
    };
  } catch {
    return { heapUsedMb: Number.NaN, eventLoopLagP99Ms: Number.NaN };
  }
}

function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** Least-squares slope of y over x. */
function slope(points: readonly { x: number; y: number }[]): number {
  const meanX = points.reduce((sum, point) => sum + point.x, 0) / points.length;
  const meanY = points.reduce((sum, point) => sum + point.y, 0) / points.length;
  const numerator = points.reduce((sum, point) => sum + (point.x - meanX) * (point.y - meanY), 0);
  const denominator = points.reduce((sum, point) => sum + (point.x - meanX) ** 2, 0);
  return denominator === 0 ? 0 : numerator / denominator;
}

function flatnessOf(figure: SampledFigure, settled: readonly SoakSample[]): Flatness {
  const values = settled.map((sample) => sample[figure]);
  const half = Math.floor(values.length / 2);
  const earlier = median(values.slice(0, half));
  const later = median(values.slice(values.length - half));
  const { absolute, relative } = FLAT_TOLERANCES[figure];
  const tolerance = Math.max(absolute, earlier * relative);
  const growth = later - earlier;
  return { figure, earlier, later, growth, tolerance, flat: growth <= tolerance };
}

export async function runSoak(options: {
  pid: number;
  adminPort: number;
  seconds: number;
  sampleSeconds: number;
  load: Omit<LoadSpec, 'durationSeconds'>;
}): Promise<SoakResult> {
  const samples: SoakSample[] = [];
  const started = performance.now();
  const takeSample = async () => {
    const atSeconds = (performance.now() - started) / MILLISECONDS_PER_SECOND;
    const rssMb = rssBytes(options.pid) / BYTES_PER_MEGABYTE;
    const fds = openFds(options.pid);
    samples.push({ atSeconds, rssMb, openFds: fds, ...(await adminMetrics(options.adminPort)) });
  };
  const sampler = setInterval(() => void takeSample(), options.sampleSeconds * MILLISECONDS_PER_SECOND);
  let load;
  try {
    load = await runLoad({ ...options.load, durationSeconds: options.seconds });
  } finally {
    clearInterval(sampler);
  }
  const settled = samples
    .filter((sample) => sample.atSeconds >= options.seconds * WARMUP_FRACTION)
    .sort((a, b) => a.atSeconds - b.atSeconds);
  const flatness = (Object.keys(FLAT_TOLERANCES) as SampledFigure[]).map((figure) =>
    flatnessOf(figure, settled),
  );
  return {
    seconds: options.seconds,
    requestsPerSecond: load.requestsPerSecond,
    failures: load.failures,
    samples,
    rssSlopeMbPerMinute:
      slope(settled.map((sample) => ({ x: sample.atSeconds, y: sample.rssMb }))) * SECONDS_PER_MINUTE,
    flatness,
    flat: flatness.every((each) => each.flat),
  };
}

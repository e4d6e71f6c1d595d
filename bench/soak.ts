// Memory over a long run: gengate under full load for the soak's length, its RSS and V8 heap sampled at
// a fixed interval. The first third is warm-up (the heap grows to its working size in a minute or two);
// growth compares the median of the two halves of the rest, which a sawtooth heap does not fool.
import { runLoad, type LoadSpec } from './load.ts';
import { BYTES_PER_MEGABYTE, median } from './measure.ts';
import { rssBytes } from './processes.ts';

const HEAP_USED_LINE = /^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m;
const WARMUP_FRACTION = 1 / 3;
const MILLISECONDS_PER_SECOND = 1_000;
const SECONDS_PER_MINUTE = 60;

export interface SoakSample {
  atSeconds: number;
  rssMb: number;
  heapUsedMb: number;
}

export interface SoakResult {
  seconds: number;
  requestsPerSecond: number;
  failures: number;
  samples: SoakSample[];
  rssGrowthMb: number;
  rssSlopeMbPerMinute: number;
  heapGrowthMb: number;
}

async function heapUsedMb(adminPort: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const value = HEAP_USED_LINE.exec(text)?.[1];
    return value === undefined ? Number.NaN : Number(value) / BYTES_PER_MEGABYTE;
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

function growth(values: readonly number[]): number {
  const half = Math.floor(values.length / 2);
  return median(values.slice(values.length - half)) - median(values.slice(0, half));
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
    samples.push({
      atSeconds: (performance.now() - started) / MILLISECONDS_PER_SECOND,
      rssMb: rssBytes(options.pid) / BYTES_PER_MEGABYTE,
      heapUsedMb: await heapUsedMb(options.adminPort),
    });
  };
  const sampler = setInterval(() => void takeSample(), options.sampleSeconds * MILLISECONDS_PER_SECOND);
  let load;
  try {
    load = await runLoad({ ...options.load, durationSeconds: options.seconds });
  } finally {
    clearInterval(sampler);
  }
  const settled = samples.filter((sample) => sample.atSeconds >= options.seconds * WARMUP_FRACTION);
  return {
    seconds: options.seconds,
    requestsPerSecond: load.requestsPerSecond,
    failures: load.failures,
    samples,
    rssGrowthMb: growth(settled.map((sample) => sample.rssMb)),
    rssSlopeMbPerMinute:
      slope(settled.map((sample) => ({ x: sample.atSeconds, y: sample.rssMb }))) * SECONDS_PER_MINUTE,
    heapGrowthMb: growth(settled.map((sample) => sample.heapUsedMb)),
  };
}

// One measured run against one target: the load, and the target's peak resident memory meanwhile.
import { loadavg } from 'node:os';
import { runLoad, type LoadResult, type LoadSpec } from './load.ts';
import { cpuSeconds, rssBytes } from './processes.ts';
import { SUBMISSION_PATH } from './request-body.ts';

const RSS_SAMPLE_INTERVAL_MS = 250;
export const BYTES_PER_MEGABYTE = 1_048_576;

export interface Target {
  id: string;
  label: string;
  url: string;
  /** The process whose memory is reported: the proxy, or the upstream for the direct row. */
  pid: number;
  authorization?: string;
}

const MICROSECONDS_PER_SECOND = 1_000_000;

export interface Measurement extends LoadResult {
  peakRssMb: number;
  /** The target's CPU time (user + system, every thread) during the run, divided by its requests. */
  cpuMicrosecondsPerRequest: number;
  /** The machine's one-minute load average when the run started: other work skews a round. */
  loadAverageAtStart: number;
}

export async function measure(
  target: Target,
  spec: Omit<LoadSpec, 'url' | 'authorization'>,
): Promise<Measurement> {
  const loadAverageAtStart = loadavg()[0] ?? Number.NaN;
  let peak = rssBytes(target.pid);
  const cpuAtStart = cpuSeconds(target.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(target.pid));
  }, RSS_SAMPLE_INTERVAL_MS);
  try {
    const result = await runLoad({
      ...spec,
      url: `${target.url}${SUBMISSION_PATH}`,
      ...(target.authorization === undefined ? {} : { authorization: target.authorization }),
    });
    const cpuUsed = cpuSeconds(target.pid) - cpuAtStart;
    return {
      ...result,
      peakRssMb: Math.max(peak, rssBytes(target.pid)) / BYTES_PER_MEGABYTE,
      cpuMicrosecondsPerRequest: (cpuUsed * MICROSECONDS_PER_SECOND) / result.requests,
      loadAverageAtStart,
    };
  } finally {
    clearInterval(sampler);
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

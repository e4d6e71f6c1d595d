// The command line of `npm run bench`: how long, how often and what else to measure.
import { parseArgs } from 'node:util';

export const DEFAULT_DURATION_SECONDS = 10;
export const DEFAULT_ROUNDS = 3;
export const DEFAULT_WARMUP_SECONDS = 3;
// Enough concurrency to keep one core busy through the proxy's queueing, not so much that wrk's own core
// spends its time juggling sockets.
export const DEFAULT_CONNECTIONS = 50;
export const DEFAULT_FIXED_RATE_PER_SECOND = 2_000;
// The fixed-rate runs need only enough connections to cover the latency at that rate.
export const FIXED_RATE_CONNECTIONS = 16;
export const DEFAULT_SOAK_SAMPLE_SECONDS = 5;

// --smoke: proves the whole pipeline runs (every process, every measurement) in a few seconds, for CI,
// with a short soak whose samples come every second.
const SMOKE_DURATION_SECONDS = 1;
const SMOKE_FIXED_RATE_PER_SECOND = 200;
const SMOKE_SOAK_SECONDS = 15;
const SMOKE_SOAK_SAMPLE_SECONDS = 1;

export interface BenchOptions {
  durationSeconds: number;
  rounds: number;
  warmupSeconds: number;
  connections: number;
  fixedRatePerSecond: number;
  /** 0: no soak. */
  soakSeconds: number;
  soakSampleSeconds: number;
  profile: boolean;
  smoke: boolean;
  /** A git revision of gengate to build and measure beside this one, in the same rounds. */
  against: string | undefined;
  /**
   * The Node targets' helper threads (the collector's, libuv's pool) may also run on the load core; each
   * event loop keeps the proxy core alone. A replica without a CPU limit on a node of several cores.
   */
  spareCore: boolean;
}

const USAGE = `usage: npm run bench -- [--duration S] [--rounds N] [--warmup S] [--connections N] [--rate R]
                        [--soak S] [--profile] [--smoke] [--against GIT-REF] [--spare-core]`;

/** The value of option `--name`, a whole number, or `fallback` when it is not given; `usage` on a mistake. */
export function wholeNumber(name: string, text: string | undefined, fallback: number, usage = USAGE): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number\n${usage}`);
  return value;
}

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      duration: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rate: { type: 'string' },
      soak: { type: 'string' },
      profile: { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      against: { type: 'string' },
      'spare-core': { type: 'boolean', default: false },
    },
  });
  if (values.against?.trim() === '') throw new Error(`--against needs a git revision\n${USAGE}`);
  const smoke = values.smoke;
  return {
    durationSeconds: wholeNumber(
      'duration',
      values.duration,
      smoke ? SMOKE_DURATION_SECONDS : DEFAULT_DURATION_SECONDS,
    ),
    rounds: Math.max(1, wholeNumber('rounds', values.rounds, smoke ? 1 : DEFAULT_ROUNDS)),
    warmupSeconds: wholeNumber('warmup', values.warmup, smoke ? 0 : DEFAULT_WARMUP_SECONDS),
    connections: Math.max(1, wholeNumber('connections', values.connections, DEFAULT_CONNECTIONS)),
    fixedRatePerSecond: Math.max(
      1,
      wholeNumber('rate', values.rate, smoke ? SMOKE_FIXED_RATE_PER_SECOND : DEFAULT_FIXED_RATE_PER_SECOND),
    ),
    soakSeconds: wholeNumber('soak', values.soak, smoke ? SMOKE_SOAK_SECONDS : 0),
    soakSampleSeconds: smoke ? SMOKE_SOAK_SAMPLE_SECONDS : DEFAULT_SOAK_SAMPLE_SECONDS,
    profile: values.profile,
    smoke,
    against: values.against,
    spareCore: values['spare-core'],
  };
}

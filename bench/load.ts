// The load generator: wrk (Debian's), one thread on the load core, driven by bench/wrk/request.lua,
// either flat out (throughput) or paced to a fixed rate (added latency).
import { fileURLToPath } from 'node:url';
import { LOAD_CORE, findExecutable, runPinned } from './processes.ts';

const REQUEST_SCRIPT = fileURLToPath(new URL('wrk/request.lua', import.meta.url));
const RESULT_LINE = /^BENCH_RESULT (\{.*\})$/m;
const REQUEST_TIMEOUT = '5s';
const MICROSECONDS_PER_MILLISECOND = 1_000;
const MICROSECONDS_PER_SECOND = 1_000_000;

export interface LoadSpec {
  url: string;
  bodyFile: string;
  authorization?: string;
  connections: number;
  durationSeconds: number;
  /** Paced to this many requests per second; flat out when absent. */
  ratePerSecond?: number;
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** Socket errors, timeouts and answers other than 2xx/3xx: any of them makes the run suspect. */
  failures: number;
}

interface WrkSummary {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  connectErrors: number;
  readErrors: number;
  writeErrors: number;
  timeouts: number;
  non2xx: number;
}

export function wrkPath(): string {
  const wrk = findExecutable('wrk');
  if (wrk === undefined) throw new Error('wrk not found: install it (apt-get install -y wrk)');
  return wrk;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const output = await runPinned(
    LOAD_CORE,
    wrkPath(),
    [
      '--threads',
      '1',
      '--connections',
      String(spec.connections),
      '--duration',
      `${spec.durationSeconds}s`,
      '--timeout',
      REQUEST_TIMEOUT,
      '--script',
      REQUEST_SCRIPT,
      spec.url,
    ],
    {
      ...process.env,
      WRK_BODY_FILE: spec.bodyFile,
      WRK_AUTHORIZATION: spec.authorization ?? '',
      WRK_RATE_PER_SECOND: String(spec.ratePerSecond ?? 0),
    },
  );
  const json = RESULT_LINE.exec(output)?.[1];
  if (json === undefined) throw new Error(`wrk printed no result:\n${output}`);
  const summary = JSON.parse(json) as WrkSummary;
  const ms = (microseconds: number) => microseconds / MICROSECONDS_PER_MILLISECOND;
  return {
    requests: summary.requests,
    requestsPerSecond: (summary.requests * MICROSECONDS_PER_SECOND) / summary.durationUs,
    p50Ms: ms(summary.p50Us),
    p99Ms: ms(summary.p99Us),
    p999Ms: ms(summary.p999Us),
    maxMs: ms(summary.maxUs),
    failures:
      summary.connectErrors + summary.readErrors + summary.writeErrors + summary.timeouts + summary.non2xx,
  };
}

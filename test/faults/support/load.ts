// The fault suite's load generator: requests at a fixed rate on a schedule, each one's outcome kept
// (status, error code, the headers a scenario checks, latency). wrk, the benchmark's generator, reports
// only aggregates: its Lua response() hook sees neither a request's latency nor which request a socket
// error belonged to, and the scenarios need both (a 503 must come within the store timeout; the ids
// refused during an outage are retried after it).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Agent, request } from 'undici';

export interface LoadRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Whatever the scenario wants to find again in the outcome (a requestId, a replica). */
  tag?: string;
}

export interface Outcome {
  tag: string | undefined;
  /** Since the start of the run. */
  sentAtMs: number;
  latencyMs: number;
  /** The HTTP status, or 0 when no answer came (the transport error is in `transportError`). */
  status: number;
  /** The envelope's error.code on an error answer. */
  errorCode?: string;
  transportError?: string;
  headers: Record<string, string>;
  /** The answer's body (the scenarios' answers are small). */
  body: string;
}

export interface LoadSpec {
  ratePerSecond: number;
  durationMs: number;
  /** The i-th request of the run. */
  next(index: number): LoadRequest;
  /** Headers copied into each outcome, lower case. */
  keepHeaders?: readonly string[];
  /** Runs once the schedule has started, while requests flow; the load stops when its time is up. */
  during?: () => Promise<void>;
}

// A request that has no answer after this long is a hung socket: recorded, never waited on further.
const HUNG_REQUEST_MS = 15_000;
// Enough sockets for the rate times the slowest answer a scenario provokes (a few hundred per second
// times half a second); past it requests queue in the agent, which the latency then shows.
const MAX_CONNECTIONS_PER_ORIGIN = 256;
const TICK_MS = 5;

function errorCodeOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown } };
    return typeof parsed.error?.code === 'string' ? parsed.error.code : undefined;
  } catch {
    return undefined;
  }
}

export async function sendOne(
  agent: Agent,
  spec: LoadRequest,
  keepHeaders: readonly string[],
  startedAt: number,
): Promise<Outcome> {
  const sentAt = performance.now();
  const base = { tag: spec.tag, sentAtMs: sentAt - startedAt };
  try {
    const response = await request(spec.url, {
      dispatcher: agent,
      method: spec.method,
      headers: spec.headers,
      body: spec.body,
      headersTimeout: HUNG_REQUEST_MS,
      bodyTimeout: HUNG_REQUEST_MS,
    });
    const body = await response.body.text();
    const headers: Record<string, string> = {};
    for (const name of keepHeaders) {
      const value = response.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return {
      ...base,
      latencyMs: performance.now() - sentAt,
      status: response.statusCode,
      ...(response.statusCode >= 400 ? { errorCode: errorCodeOf(body) } : {}),
      headers,
      body,
    };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ...base,
      latencyMs: performance.now() - sentAt,
      status: 0,
      transportError: typeof code === 'string' ? code : String(error),
      headers: {},
      body: '',
    };
  }
}

export function createLoadAgent(): Agent {
  return new Agent({ connections: MAX_CONNECTIONS_PER_ORIGIN, pipelining: 1 });
}

export interface LoadRun {
  outcomes: Outcome[];
  /**
   * The generator's own longest event-loop stall: on a machine shared with the processes under test, a
   * latency includes it (the answer waited for the generator, not the other way round).
   */
  generatorMaxStallMs: number;
}

const NANOSECONDS_PER_MILLISECOND = 1e6;

/** Sends `ratePerSecond` requests a second for `durationMs`, then waits for every answer. */
export async function runLoad(spec: LoadSpec): Promise<LoadRun> {
  const agent = createLoadAgent();
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  const keepHeaders = spec.keepHeaders ?? [];
  const pending: Promise<Outcome>[] = [];
  const startedAt = performance.now();
  const periodMs = 1_000 / spec.ratePerSecond;
  const total = Math.round((spec.durationMs / 1_000) * spec.ratePerSecond);
  const schedule = new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      // Every slot that is due goes now: a late tick sends its backlog rather than lowering the rate.
      const due = Math.min(total, Math.floor((performance.now() - startedAt) / periodMs) + 1);
      while (pending.length < due) {
        pending.push(sendOne(agent, spec.next(pending.length), keepHeaders, startedAt));
      }
      if (pending.length >= total) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  try {
    await Promise.all([schedule, spec.during?.()]);
    const outcomes = await Promise.all(pending);
    return { outcomes, generatorMaxStallMs: stalls.max / NANOSECONDS_PER_MILLISECOND };
  } finally {
    stalls.disable();
    await agent.close();
  }
}

/** What a scenario reports: how many requests were answered with what, and how fast. */
export interface OutcomeSummary {
  requests: number;
  /** "200", "503 store_unavailable", "error ECONNRESET", … */
  answers: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function answerOf(outcome: Outcome): string {
  if (outcome.status === 0) return `error ${outcome.transportError ?? '?'}`;
  return outcome.errorCode === undefined ? String(outcome.status) : `${outcome.status} ${outcome.errorCode}`;
}

function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

export function summarise(outcomes: readonly Outcome[]): OutcomeSummary {
  const answers: Record<string, number> = {};
  for (const outcome of outcomes) {
    const answer = answerOf(outcome);
    answers[answer] = (answers[answer] ?? 0) + 1;
  }
  const latencies = outcomes.map((outcome) => outcome.latencyMs).sort((a, b) => a - b);
  return {
    requests: outcomes.length,
    answers,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    maxMs: latencies.at(-1) ?? Number.NaN,
  };
}

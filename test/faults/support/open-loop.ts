// The flood's generator, seen from the test: runs test/faults/support/open-loop-worker.ts in a worker
// thread and turns its outcomes into the suite's (test/faults/support/load.ts), for the report.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { LoadRun, Outcome } from './load.ts';
import type { RawOutcome, Schedule, WorkerCommand, WorkerResult } from './open-loop-worker.ts';

export type { Schedule } from './open-loop-worker.ts';

export interface GeneratorRun extends LoadRun {
  /** The generator's longest lateness in opening a connection: it kept up when this stays small. */
  generatorMaxLateMs: number;
  /**
   * How long connections took to be established, from when they were due (ms), and how many never were:
   * time spent there is time in the kernel (a SYN dropped by a full accept queue is sent again after 1 s,
   * 3 s, 7 s), before the replica could see the request.
   */
  connecting: { p50Ms: number; p99Ms: number; maxMs: number; never: number };
}

function connectingOf(raws: readonly RawOutcome[]): GeneratorRun['connecting'] {
  const times = raws
    .flatMap((raw) => (raw.connectedMs === undefined ? [] : [raw.connectedMs]))
    .sort((a, b) => a - b);
  const at = (fraction: number) =>
    Math.round(times[Math.min(times.length - 1, Math.ceil(fraction * times.length) - 1)] ?? Number.NaN);
  return {
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: Math.round(times.at(-1) ?? Number.NaN),
    never: raws.length - times.length,
  };
}

function outcomeOf(raw: RawOutcome): Outcome {
  return {
    tag: raw.label,
    sentAtMs: raw.sentAtMs,
    latencyMs: raw.latencyMs,
    status: raw.status,
    ...(raw.errorCode === undefined ? {} : { errorCode: raw.errorCode }),
    ...(raw.transportError === undefined ? {} : { transportError: raw.transportError }),
    headers: raw.retryAfter === undefined ? {} : { 'retry-after': raw.retryAfter },
    body: '',
  };
}

/** One run of the generator in a fresh worker, ended with it. */
async function inWorker(command: WorkerCommand): Promise<GeneratorRun> {
  const worker = new Worker(new URL('./open-loop-worker.ts', import.meta.url));
  try {
    worker.postMessage(command);
    const [result] = (await Promise.race([
      once(worker, 'message'),
      once(worker, 'error').then(([error]) => Promise.reject(error as Error)),
    ])) as [WorkerResult];
    return {
      outcomes: result.outcomes.map(outcomeOf),
      generatorMaxStallMs: result.generatorMaxStallMs,
      generatorMaxLateMs: result.generatorMaxLateMs,
      connecting: connectingOf(result.outcomes),
    };
  } finally {
    await worker.terminate();
  }
}

/** Each schedule's connections at its fixed rate, each one request, whatever the answers do. */
export function openLoop(port: number, schedules: Schedule[]): Promise<GeneratorRun> {
  return inWorker({ kind: 'open', port, schedules });
}

/** `concurrency` clients, each sending the next request on a new connection as soon as one is answered. */
export function closedLoop(
  port: number,
  request: Uint8Array,
  options: { concurrency: number; durationMs: number },
): Promise<GeneratorRun> {
  return inWorker({ kind: 'closed', port, request, ...options });
}

/** A POST as bytes, with `Connection: close`: one request per connection, as a flood of new clients. */
export function rawPost(path: string, headers: Record<string, string>, body: string): Uint8Array {
  const bodyBytes = Buffer.from(body, 'utf8');
  const head = [
    `POST ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    'connection: close',
    `content-length: ${bodyBytes.length}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), bodyBytes]);
}

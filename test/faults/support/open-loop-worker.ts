// The flood's load generator, run in a worker thread of its own (test/faults/support/open-loop.ts): on two
// cores shared with the replica and the simulator, the generator must not queue behind the test's own
// event loop (the simulator answers there). Each request is one new TCP connection on a raw socket, its
// bytes written at once and its answer parsed by hand: no pool, no agent queue, so a request goes out at
// its scheduled time whatever happened to the ones before (open loop), and its latency counts from that
// time, so a generator running late shows as latency rather than hiding it.
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';

export interface Schedule {
  /** The request's bytes, head and body, sent on a new connection (with `Connection: close`). */
  request: Uint8Array;
  /** Open loop: `ratePerSecond` connections a second from `startMs` for `durationMs`. */
  ratePerSecond: number;
  startMs: number;
  durationMs: number;
  label: string;
}

export type WorkerCommand =
  | { kind: 'open'; port: number; schedules: Schedule[] }
  | { kind: 'closed'; port: number; request: Uint8Array; concurrency: number; durationMs: number };

export interface RawOutcome {
  label: string;
  /** When it was due, since the start of the run. */
  sentAtMs: number;
  /** From when it was due to its whole answer, or to the failure. */
  latencyMs: number;
  /** How late the generator opened the connection. */
  lateMs: number;
  /** From when it was due to the connection's establishment; undefined when it never was. */
  connectedMs?: number;
  status: number;
  errorCode?: string;
  retryAfter?: string;
  transportError?: string;
}

export interface WorkerResult {
  outcomes: RawOutcome[];
  generatorMaxStallMs: number;
  /** The generator's longest lateness in opening a connection. */
  generatorMaxLateMs: number;
}

// A request without its answer after this long counts as a timeout and is given up.
const GIVE_UP_MS = 10_000;
const TICK_MS = 1;
const HEADER_END = '\r\n\r\n';
const NANOSECONDS_PER_MILLISECOND = 1e6;

function headerOf(head: string, name: string): string | undefined {
  const match = new RegExp(`\r\n${name}:[ \t]*([^\r\n]*)`, 'i').exec(head);
  return match?.[1];
}

function errorCodeOf(body: string): string | undefined {
  return /"code":"([a-z_]+)"/.exec(body)?.[1];
}

/** Sends `request` on a new connection; calls `done` once, with the whole answer or the failure. */
function sendOne(
  port: number,
  request: Uint8Array,
  dueAt: number,
  startedAt: number,
  label: string,
  done: (outcome: RawOutcome) => void,
): void {
  const lateMs = performance.now() - dueAt;
  let text = '';
  let finished = false;
  let connectedMs: number | undefined;
  const base = { label, sentAtMs: dueAt - startedAt, lateMs };
  const finish = (rest: Omit<RawOutcome, 'label' | 'sentAtMs' | 'lateMs' | 'latencyMs'>) => {
    if (finished) return;
    finished = true;
    clearTimeout(giveUp);
    socket.destroy();
    done({
      ...base,
      latencyMs: performance.now() - dueAt,
      ...(connectedMs === undefined ? {} : { connectedMs }),
      ...rest,
    });
  };
  const giveUp = setTimeout(() => {
    finish({ status: 0, transportError: 'timeout' });
  }, GIVE_UP_MS);
  /** The answer when it is whole: its length is known, or the server closed the connection after it. */
  const complete = (ended: boolean) => {
    const headEnd = text.indexOf(HEADER_END);
    if (headEnd < 0) return false;
    const head = text.slice(0, headEnd);
    const body = text.slice(headEnd + HEADER_END.length);
    const length = headerOf(head, 'content-length');
    const chunkedDone = /\r\n0\r\n\r\n$/.test(body) || body.startsWith('0\r\n\r\n');
    if (!ended && !(length !== undefined && body.length >= Number(length)) && !chunkedDone) return false;
    const status = Number(head.slice('HTTP/1.1 '.length, 'HTTP/1.1 '.length + 3));
    const retryAfter = headerOf(head, 'retry-after');
    const errorCode = status >= 400 ? errorCodeOf(body) : undefined;
    finish({
      status,
      ...(errorCode === undefined ? {} : { errorCode }),
      ...(retryAfter === undefined ? {} : { retryAfter }),
    });
    return true;
  };
  const socket: Socket = connect({ port, host: '127.0.0.1', noDelay: true });
  socket.write(request);
  socket.once('connect', () => {
    connectedMs = performance.now() - dueAt;
  });
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    complete(false);
  });
  socket.on('end', () => {
    if (!complete(true)) finish({ status: 0, transportError: 'closed before an answer' });
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    // An answer read whole before the reset still counts as answered.
    if (!complete(true)) finish({ status: 0, transportError: error.code ?? String(error) });
  });
  socket.on('close', () => {
    if (!complete(true)) finish({ status: 0, transportError: 'closed before an answer' });
  });
}

function openLoop(port: number, schedules: Schedule[]): Promise<RawOutcome[]> {
  const outcomes: RawOutcome[] = [];
  const startedAt = performance.now();
  const sent = schedules.map(() => 0);
  const totals = schedules.map((each) => Math.round((each.durationMs / 1_000) * each.ratePerSecond));
  const expected = totals.reduce((sum, total) => sum + total, 0);
  return new Promise((resolve) => {
    const onOutcome = (outcome: RawOutcome) => {
      outcomes.push(outcome);
      if (outcomes.length === expected) resolve(outcomes);
    };
    const timer = setInterval(() => {
      const now = performance.now();
      let all = true;
      for (const [index, schedule] of schedules.entries()) {
        const periodMs = 1_000 / schedule.ratePerSecond;
        const elapsed = now - startedAt - schedule.startMs;
        // Every slot that is due goes now: a late tick sends its backlog rather than lowering the rate.
        const due = elapsed < 0 ? 0 : Math.min(totals[index]!, Math.floor(elapsed / periodMs) + 1);
        while (sent[index]! < due) {
          const dueAt = startedAt + schedule.startMs + sent[index]! * periodMs;
          sent[index]! += 1;
          sendOne(port, schedule.request, dueAt, startedAt, schedule.label, onOutcome);
        }
        if (sent[index]! < totals[index]!) all = false;
      }
      if (all) clearInterval(timer);
    }, TICK_MS);
  });
}

function closedLoop(
  port: number,
  request: Uint8Array,
  concurrency: number,
  durationMs: number,
): Promise<RawOutcome[]> {
  const outcomes: RawOutcome[] = [];
  const startedAt = performance.now();
  let running = 0;
  return new Promise((resolve) => {
    const next = () => {
      if (performance.now() - startedAt >= durationMs) {
        if (running === 0) resolve(outcomes);
        return;
      }
      running += 1;
      sendOne(port, request, performance.now(), startedAt, 'capacity', (outcome) => {
        outcomes.push(outcome);
        running -= 1;
        next();
      });
    };
    for (let slot = 0; slot < concurrency; slot++) next();
  });
}

parentPort?.on('message', (command: WorkerCommand) => {
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  const run =
    command.kind === 'open'
      ? openLoop(command.port, command.schedules)
      : closedLoop(command.port, command.request, command.concurrency, command.durationMs);
  void run.then((outcomes) => {
    stalls.disable();
    const result: WorkerResult = {
      outcomes,
      generatorMaxStallMs: stalls.max / NANOSECONDS_PER_MILLISECOND,
      generatorMaxLateMs: outcomes.reduce((max, outcome) => Math.max(max, outcome.lateMs), 0),
    };
    parentPort?.postMessage(result);
  });
});

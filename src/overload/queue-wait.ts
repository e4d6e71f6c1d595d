// How long a request has already waited before the gateway looked at it (docs/reliability.md, "Overload"),
// so that one that waited longer than a client can usefully wait is answered 503 overloaded at once
// instead of being served late (src/overload/shed-load.ts). Two waits are seen, each for a clock read:
//   - how late the event loop is: a timer every TICK_MS notes how late it ran (a turn that ran long, or a
//     process held off the CPU, makes it late), which is how long the events handled in the same turn
//     may have waited; in later turns, how long the loop has been busy since the tick (the wall time
//     less the time it spent waiting for events, performance.nodeTiming.idleTime, kept by libuv: a
//     process idle for an hour has not been busy for an hour). A connection accepted now waited about
//     that long in the kernel's accept queue (the loop accepts every queued one when it turns), and the
//     head of a request read now arrived no earlier;
//   - for the first request of a connection, the time since the connection was accepted plus that wait:
//     a connection accepted in one turn has its request read in a later one.
//
// A connection that already waited too long when accepted is answered before Node's HTTP server sees it:
// a whole 503 is written at once and the connection closed after it, its request never parsed and its
// body never read (what the client sends is discarded, so that the close does not reset the connection
// under the answer). During a flood the accept queue holds thousands of connections; answering each costs
// a write, where handing it to the HTTP server and Fastify would cost a parse, a request, hooks and a log
// line: the stale ones are cleared fast enough for the fresh ones behind them to be served in time.
import { randomUUID } from 'node:crypto';
import type { Server, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { rawAnswer } from '../errors/client-error.ts';
import { acceptQueueReader } from '../server/accept-queue.ts';
import type { GatewayError } from '../errors/registry.ts';

// When the first request of a connection is yet to come: its arrival, as a performance.now() time.
// FIRST_REQUEST_READ once it came; absent on a connection the server never accepted (fastify.inject).
const ARRIVED_AT = Symbol('gengate.arrivedAt');
const FIRST_REQUEST_READ = -1;
type StampedSocket = Socket & { [ARRIVED_AT]?: number };
// How long a connection answered at accept may take to close after its answer: the client reads the
// answer and closes; one that does not is cut.
const LINGER_MS = 2_000;
// How often the loop's lateness is read: what a process held off the CPU or busy with one long turn shows.
const TICK_MS = 10;
// Readings of the accept queue kept at once: a second of them at TICK_MS.
const MAX_MARKS = 100;

export interface QueueWaitOptions {
  maxQueueWaitMs: number;
  /** The answer of a connection shed when accepted (the same for each: built once). */
  answer: GatewayError;
  onShed: () => void;
}

export interface QueueWait {
  /** How long the request now read from `socket` has waited, in ms. */
  waitedMs(socket: Socket): number;
  stop(): void;
}

/** Answers `socket` with `answer` and closes it once the client has read it, its request unread. */
function answerAtAccept(socket: Socket, answer: GatewayError): void {
  socket.on('error', () => {
    // A client gone before its answer: nothing to answer any more.
  });
  socket.setTimeout(LINGER_MS, () => socket.destroy());
  socket.end(rawAnswer(answer, randomUUID()));
  // Read and drop whatever the client sends; its end closes the connection.
  socket.resume();
}

/**
 * Watches `server`'s connections; a connection that waited past `maxQueueWaitMs` before it was accepted
 * is answered at once and never reaches the server's other 'connection' listeners (the HTTP server's own
 * among them), which must all be added before this is called.
 */
export function watchQueueWait(server: Server, options: QueueWaitOptions): QueueWait {
  let tickedAt = performance.now();
  let idleAtTick = performance.nodeTiming.idleTime;
  let lateMs = 0;
  const turnEnded = () => {
    lateMs = 0;
  };
  // The accept queue, read on ticks while connections come: each reading is a mark "the connections up to
  // number `through` were all queued at `at`", so the connection numbered n, once accepted, waited at
  // least since the first mark that reaches n.
  let queue: ReturnType<typeof acceptQueueReader> | undefined;
  server.once('listening', () => {
    const address = server.address();
    if (address !== null && typeof address === 'object')
      queue = acceptQueueReader(address.port, address.family === 'IPv6');
  });
  let accepted = 0;
  let acceptedAtLastReading = 0;
  let queuedAtLastReading = 0;
  const marks: { through: number; at: number }[] = [];
  const readQueue = (now: number) => {
    if (queue === undefined || (accepted === acceptedAtLastReading && queuedAtLastReading === 0)) return;
    acceptedAtLastReading = accepted;
    queuedAtLastReading = queue.read() ?? 0;
    if (queuedAtLastReading > 0 && marks.length < MAX_MARKS)
      marks.push({ through: accepted + queuedAtLastReading, at: now });
  };
  /** How long the connection accepted now waited in the accept queue, at least. */
  const queuedForMs = (now: number) => {
    let first = marks[0];
    while (first !== undefined && first.through < accepted) {
      marks.shift();
      first = marks[0];
    }
    return first === undefined ? 0 : now - first.at;
  };
  const ticks = setInterval(() => {
    const now = performance.now();
    lateMs = Math.max(0, now - tickedAt - TICK_MS);
    tickedAt = now;
    idleAtTick = performance.nodeTiming.idleTime;
    // The lateness is what this turn's events waited; later turns are judged on the busy time since.
    if (lateMs > 0) setImmediate(turnEnded);
    readQueue(now);
  }, TICK_MS).unref();
  /** How long what the loop handles now may have waited for it. */
  const loopWaitMs = (now: number) =>
    Math.max(lateMs, now - tickedAt - (performance.nodeTiming.idleTime - idleAtTick));
  const passOn = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: StampedSocket) => {
    const now = performance.now();
    accepted += 1;
    const waited = Math.max(loopWaitMs(now), queuedForMs(now));
    if (waited > options.maxQueueWaitMs) {
      options.onShed();
      answerAtAccept(socket, options.answer);
      return;
    }
    socket[ARRIVED_AT] = now - waited;
    for (const listener of passOn) listener.call(server, socket);
  });
  return {
    waitedMs(socket: StampedSocket) {
      const arrivedAt = socket[ARRIVED_AT];
      if (arrivedAt === undefined) return 0;
      const now = performance.now();
      const waited = loopWaitMs(now);
      if (arrivedAt === FIRST_REQUEST_READ) return waited;
      socket[ARRIVED_AT] = FIRST_REQUEST_READ;
      return Math.max(waited, now - arrivedAt);
    },
    stop() {
      clearInterval(ticks);
      queue?.close();
    },
  };
}

// Store commands issued during one turn of the event loop leave in one socket write.
//
// Under load the gateway sends several commands per turn (admissions, the records of answers, the usage
// meter), and ioredis writes each one at once: a system call apiece, which was the largest single cost of
// a request in the CPU profile (docs/performance.md). Corking the socket at the first command of a turn
// and uncorking it in that turn's check phase (setImmediate, right after the poll phase has handed over
// every request that was ready) sends them together, without waiting for any earlier reply: unlike
// ioredis's auto-pipelining, which holds new commands back while a batch is in flight.
//
// Calls batched per turn (batch-per-turn.ts) leave in the turn's write too, and in an order that
// keeps what a request reads up to date: the records of answers go before any later command (so a
// repeat admitted in the same turn sees its original's answer, whatever path its admission takes), and
// the turn's admissions go at its end, after those records.
// Nothing is lost at shutdown: closing the connection ends the socket, and ending a stream uncorks it.
import { Redis } from 'ioredis';
import type { Writable } from 'node:stream';
import type { RedisConnection } from './connection.ts';

export type Send = () => void;

/**
 * When a batch of the turn is sent; both run before the turn's commands leave. A send must not throw
 * (batch-per-turn's hands every error to its callers): the sends after it in the turn would be lost.
 */
export interface TurnSchedule {
  /** Before the next command sent on the connection, or at the end of the turn if none comes. */
  beforeNextCommand: (send: Send) => void;
  /** At the end of the turn (its check phase): the last of the turn's commands. */
  atTurnEnd: (send: Send) => void;
}

const schedules = new WeakMap<Redis, TurnSchedule>();

export function coalesceWrites(redis: Redis): void {
  const sendCommand = redis.sendCommand.bind(redis);
  let corked: Writable | undefined;
  let beforeNext: Send[] = [];
  let atEnd: Send[] = [];
  let endScheduled = false;
  // Each list is emptied before its sends run, so a send's own command does not run it again.
  const run = (sends: Send[]): void => {
    for (const send of sends) send();
  };
  const sendBeforeNext = (): void => {
    const due = beforeNext;
    beforeNext = [];
    run(due);
  };
  const endTurn = (): void => {
    try {
      const due = atEnd;
      atEnd = [];
      run(due);
      sendBeforeNext();
    } finally {
      endScheduled = false;
      // The socket corked, even if a reconnection has replaced it since.
      corked?.uncork();
      corked = undefined;
    }
  };
  const endTurnSoon = (): void => {
    if (endScheduled) return;
    endScheduled = true;
    setImmediate(endTurn);
  };
  redis.sendCommand = (command, stream) => {
    if (beforeNext.length > 0) sendBeforeNext();
    // Before 'ready' ioredis writes its own handshake (and without an offline queue refuses the rest).
    if (corked === undefined && redis.status === 'ready') {
      corked = redis.stream;
      corked.cork();
      endTurnSoon();
    }
    return sendCommand(command, stream);
  };
  schedules.set(redis, {
    beforeNextCommand: (send) => {
      beforeNext.push(send);
      endTurnSoon();
    },
    atTurnEnd: (send) => {
      atEnd.push(send);
      endTurnSoon();
    },
  });
}

/**
 * When calls batched per turn are sent on `connection`; undefined on a Cluster, whose masters each
 * coalesce their own writes and whose keys spread over slots that one call cannot span.
 */
export function turnScheduleOf(connection: RedisConnection): TurnSchedule | undefined {
  return connection instanceof Redis ? schedules.get(connection) : undefined;
}

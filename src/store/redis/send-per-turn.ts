// Store commands issued during one turn of the event loop leave in one socket write.
//
// Under load the gateway sends several commands per turn (admissions, the records of answers, the usage
// meter), and a command written at once costs a system call apiece: once the largest single cost of a
// request in the CPU profile (docs/performance.md). On a single Redis the turn's first command corks the
// connection's socket (Node's `socket.cork()`), each command goes through the connection's own command
// method with a callback for its reply (on a ready connection without auto-pipelining, ioredis writes a
// command to its socket as it is sent, so into the corked socket), and the turn's check phase
// (setImmediate, right after the poll phase has handed over every request that was ready) uncorks it:
// the turn's commands leave in one `writev`, without waiting for any earlier reply, unlike ioredis's
// auto-pipelining, which holds new commands back while a batch is in flight (decision 0003).
//
// Not an ioredis `pipeline()` per turn (decision 0076): its constructor gives each pipeline a `length`
// accessor of its own, so V8 makes each one a hidden class in the old generation that points back at
// it; every pipeline, its commands and what their callbacks reach then outlive the young generation and
// wait for the next mark-compact, whose marking made the replica's tail below saturation.
//
// Calls batched per turn (batchPerTurn, below) join the turn's write in an order that keeps what a
// request reads up to date: the records of answers go before any later command (so a repeat admitted in
// the same turn sees its original's answer, whatever path its admission takes), and the turn's admissions
// go at its end, after those records. A Cluster sends each command at once: its keys spread over slots
// on several masters.
import { Redis } from 'ioredis';
import type { Socket } from 'node:net';
import type { RedisConnection } from './connection.ts';
import type { ScriptArg } from './scripts.ts';

type Send = () => void;

/**
 * When a batch of the turn is sent; both run before the turn's write leaves. A send must not throw
 * (batchPerTurn hands every error to its callers): the sends after it in the turn would be lost.
 */
export interface TurnSchedule {
  /** Before the next command sent on the connection, or at the end of the turn if none comes. */
  beforeNextCommand: (send: Send) => void;
  /** At the end of the turn (its check phase): the last of the turn's commands. */
  atTurnEnd: (send: Send) => void;
}

export interface CommandSender {
  /** Sends an ioredis command (a script's too) with `args`; answers its reply. */
  send: (command: string, args: readonly ScriptArg[]) => Promise<unknown>;
  /** Undefined on a Cluster, which batches nothing. */
  turn: TurnSchedule | undefined;
}

function commandOf(connection: RedisConnection, command: string) {
  const method: unknown = Reflect.get(connection, command);
  if (typeof method !== 'function') throw new Error(`ioredis has no ${command} command`);
  return method as (...args: unknown[]) => unknown;
}

function sendNow(connection: RedisConnection, command: string, args: readonly ScriptArg[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    commandOf(connection, command).call(
      connection,
      ...args,
      (error: Error | null | undefined, reply?: unknown) => {
        if (error === null || error === undefined) resolve(reply);
        else reject(error);
      },
    );
  });
}

export function createCommandSender(connection: RedisConnection): CommandSender {
  if (!(connection instanceof Redis)) {
    return { send: (command, args) => sendNow(connection, command, args), turn: undefined };
  }
  // The socket corked by the turn's first command: the one uncorked at its end, even should the
  // connection have replaced its socket meanwhile (a reconnection).
  let corked: Socket | undefined;
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
      const socket = corked;
      corked = undefined;
      socket?.uncork();
    }
  };
  const endTurnSoon = (): void => {
    if (endScheduled) return;
    endScheduled = true;
    setImmediate(endTurn);
  };
  return {
    send(command, args) {
      if (beforeNext.length > 0) sendBeforeNext();
      if (corked === undefined) {
        // ioredis's socket (TLS or not). Its typings promise one, but there is none until the first
        // connection attempt has made it; a command sent then fails at once, unwritten.
        const socket = connection.stream as Socket | undefined;
        corked = socket;
        socket?.cork();
        endTurnSoon();
      }
      return sendNow(connection, command, args);
    },
    turn: {
      beforeNextCommand: (send) => {
        beforeNext.push(send);
        endTurnSoon();
      },
      atTurnEnd: (send) => {
        atEnd.push(send);
        endTurnSoon();
      },
    },
  };
}

// Calls batched per turn: the calls made during one turn of the event loop, sent to the store as one.
// Under load a turn hands over many requests and upstream answers at once, and each one's admission or
// record used to be a store command of its own: an ioredis command, a reply to parse and a script run
// inside Redis apiece. Batched, they are one command per kind, sent at the end of the turn (its check
// phase, above) after the poll phase has delivered everything that was ready, in the same socket write as
// the turn's other commands: no call waits longer than it did alone. Each caller gets its own item's
// result, and every caller of a batch gets the error when the call fails.

// Items per call at most: a bounded script run, so Redis never blocks long on one replica's turn.
const MAX_ITEMS_PER_CALL = 64;

interface Waiting<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

export interface TurnBatch<Item, Result> {
  /** Queues the item for this turn's call, and answers its result. */
  add: (item: Item) => Promise<Result>;
  /** Sends what is queued now, and settles once every call sent so far is answered (for shutdown). */
  drain: () => Promise<void>;
}

/**
 * `send` answers one result per item, in the items' order. `schedule` decides when in the turn the batch
 * is sent (see TurnSchedule).
 */
export function batchPerTurn<Item, Result>(
  send: (items: readonly Item[]) => Promise<readonly Result[]>,
  schedule: (send: Send) => void,
): TurnBatch<Item, Result> {
  let batch: Waiting<Item, Result>[] = [];
  const inFlight = new Set<Promise<unknown>>();

  function flush(): void {
    const sending = batch;
    batch = [];
    // A batch that filled up was sent before its turn ended; the scheduled send finds nothing left.
    if (sending.length === 0) return;
    const rejectAll = (error: unknown) => {
      for (const waiting of sending) waiting.reject(error);
    };
    let answered: Promise<unknown>;
    try {
      answered = send(sending.map((waiting) => waiting.item)).then((results) => {
        sending.forEach((waiting, index) => {
          waiting.resolve(results[index] as Result);
        });
      }, rejectAll);
    } catch (error) {
      rejectAll(error);
      return;
    }
    inFlight.add(answered);
    void answered.finally(() => inFlight.delete(answered));
  }

  return {
    add: (item) =>
      new Promise<Result>((resolve, reject) => {
        if (batch.length === 0) schedule(flush);
        batch.push({ item, resolve, reject });
        if (batch.length >= MAX_ITEMS_PER_CALL) flush();
      }),
    async drain() {
      // The flush already scheduled for this turn will find nothing left.
      flush();
      await Promise.all(inFlight);
    },
  };
}

// Calls made during one turn of the event loop, sent to the store as one.
//
// Under load a turn hands over many requests and upstream answers at once, and each one's admission or
// record used to be a store command of its own: an ioredis command, a reply to parse and a script run
// inside Redis apiece. Batched, they are one command per kind, sent at the end of the turn (its check
// phase, see send-per-turn.ts) after the poll phase has delivered everything that was ready, in the
// same socket write as the turn's other commands: no call waits longer than it did alone. Each caller gets
// its own item's result, and every caller of a batch gets the error when the call fails.
import type { Send } from './send-per-turn.ts';

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
 * is sent (see TurnSchedule in send-per-turn.ts).
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

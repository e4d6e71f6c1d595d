// Calls made during one turn of the event loop, sent to the store as one.
//
// Under load a turn hands over many upstream answers at once, and each one's record used to be a store
// command of its own: an ioredis command, a reply to parse and a script run inside Redis apiece. Batched,
// the turn's records are one command, sent in the turn's check phase (setImmediate), after the poll
// phase has delivered every answer that was ready. Each caller gets its own item's result, and every
// caller of a batch gets the error when the call fails, so a batch fails exactly as its calls would have.
interface Waiting<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** `send` answers one result per item, in the items' order. */
export function batchPerTurn<Item, Result>(
  send: (items: readonly Item[]) => Promise<readonly Result[]>,
  maxItems: number,
): (item: Item) => Promise<Result> {
  let batch: Waiting<Item, Result>[] = [];

  function flush(): void {
    const sending = batch;
    batch = [];
    // A batch that filled up was sent before its turn ended; the turn's check phase finds nothing left.
    if (sending.length === 0) return;
    const rejectAll = (error: unknown) => {
      for (const waiting of sending) waiting.reject(error);
    };
    try {
      send(sending.map((waiting) => waiting.item)).then((results) => {
        sending.forEach((waiting, index) => {
          waiting.resolve(results[index] as Result);
        });
      }, rejectAll);
    } catch (error) {
      rejectAll(error);
    }
  }

  return (item) =>
    new Promise<Result>((resolve, reject) => {
      if (batch.length === 0) setImmediate(flush);
      batch.push({ item, resolve, reject });
      if (batch.length >= maxItems) flush();
    });
}

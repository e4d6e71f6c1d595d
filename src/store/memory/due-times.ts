// When each job of the memory job book is next due, kept in order, so that a lease looks at the few jobs
// due first rather than sorting every job in flight (as the Redis book reads a sorted set). A binary
// min-heap of (due time, id); moving or removing a job leaves its old entry behind, recognised as stale
// (no longer the job's due time) and dropped when it reaches the top.

// Stale entries kept before the heap is rebuilt, beyond one per job.
const STALE_ENTRIES_ALLOWED = 64;

interface Entry {
  dueAt: number;
  id: string;
}

export interface DueTimes {
  /** Makes `id` due at `dueAt`, replacing its earlier due time. */
  set(id: string, dueAt: number): void;
  delete(id: string): void;
  /**
   * Up to `limit` ids due at `at` or before, earliest first, taken out: set the ones to keep again.
   */
  takeDue(at: number, limit: number): { id: string; dueAt: number }[];
}

export function createDueTimes(): DueTimes {
  const current = new Map<string, number>();
  const heap: Entry[] = [];

  // Indexes given here are always within the heap.
  const entryAt = (index: number) => heap[index] as Entry;
  const before = (a: number, b: number) => entryAt(a).dueAt < entryAt(b).dueAt;
  const swap = (a: number, b: number) => {
    [heap[a], heap[b]] = [entryAt(b), entryAt(a)];
  };
  function push(entry: Entry): void {
    heap.push(entry);
    for (let index = heap.length - 1; index > 0;) {
      const parent = (index - 1) >> 1;
      if (!before(index, parent)) break;
      swap(index, parent);
      index = parent;
    }
  }
  function pop(): Entry | undefined {
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    heap[0] = last;
    for (let index = 0; ;) {
      const [left, right] = [2 * index + 1, 2 * index + 2];
      let smallest = index;
      if (left < heap.length && before(left, smallest)) smallest = left;
      if (right < heap.length && before(right, smallest)) smallest = right;
      if (smallest === index) break;
      swap(index, smallest);
      index = smallest;
    }
    return top;
  }
  // Stale entries are dropped as they surface; a heap of mostly stale entries is rebuilt from the map.
  function compactIfMostlyStale(): void {
    if (heap.length <= 2 * current.size + STALE_ENTRIES_ALLOWED) return;
    heap.length = 0;
    for (const [id, dueAt] of current) push({ id, dueAt });
  }

  return {
    set(id, dueAt) {
      current.set(id, dueAt);
      push({ id, dueAt });
      compactIfMostlyStale();
    },
    delete(id) {
      current.delete(id);
    },
    takeDue(at, limit) {
      const taken: { id: string; dueAt: number }[] = [];
      for (let top = heap[0]; taken.length < limit && top !== undefined && top.dueAt <= at; top = heap[0]) {
        const entry = pop() as Entry;
        if (current.get(entry.id) !== entry.dueAt) continue;
        current.delete(entry.id);
        taken.push(entry);
      }
      return taken;
    },
  };
}

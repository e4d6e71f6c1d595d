// The memory job book's due times (src/store/memory/due-times.ts) against a plain map sorted on every
// read, which the book used before: whatever the order of moves, removals and takes, a take answers the
// jobs due first, each at its latest due time, and never one that was removed or moved later.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { createDueTimes } from '../../src/store/memory/due-times.ts';

const jobId = fc.constantFrom(...Array.from({ length: 12 }, (_unused, index) => `job-${index}`));
const time = fc.integer({ min: 0, max: 50 });
const operation = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), id: jobId, dueAt: time }),
  fc.record({ kind: fc.constant('delete' as const), id: jobId }),
  fc.record({ kind: fc.constant('take' as const), at: time, limit: fc.integer({ min: 0, max: 6 }) }),
);

test('a take answers the earliest due jobs, as sorting every job would', () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 400 }), (operations) => {
      const dueTimes = createDueTimes();
      const model = new Map<string, number>();
      for (const step of operations) {
        if (step.kind === 'set') {
          dueTimes.set(step.id, step.dueAt);
          model.set(step.id, step.dueAt);
        } else if (step.kind === 'delete') {
          dueTimes.delete(step.id);
          model.delete(step.id);
        } else {
          const taken = dueTimes.takeDue(step.at, step.limit);
          const expected = [...model]
            .filter(([, dueAt]) => dueAt <= step.at)
            .map(([, dueAt]) => dueAt)
            .sort((a, b) => a - b)
            .slice(0, step.limit);
          // Jobs due at the same time may come in either order: compare the times, then each job's own.
          expect(taken.map((entry) => entry.dueAt)).toEqual(expected);
          for (const entry of taken) {
            expect(model.get(entry.id)).toBe(entry.dueAt);
            model.delete(entry.id);
          }
        }
      }
    }),
    { numRuns: 300 },
  );
});

test('ten thousand moves of one job leave one entry to take', () => {
  const dueTimes = createDueTimes();
  for (let dueAt = 10_000; dueAt > 0; dueAt--) dueTimes.set('moved', dueAt);
  expect(dueTimes.takeDue(20_000, 10)).toEqual([{ id: 'moved', dueAt: 1 }]);
  expect(dueTimes.takeDue(20_000, 10)).toEqual([]);
});

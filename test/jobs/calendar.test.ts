// The budgets' UTC periods (docs/budgets.md), which the memory job book asks for on every reservation:
// the answer it keeps for the day must never outlive the day, whichever way the clock moves.
import { expect, test } from 'vitest';
import { budgetPeriods } from '../../src/jobs/calendar.ts';

const at = (iso: string) => Date.parse(iso);

test('each instant gets its own day and month, across a month end and back', () => {
  const lastMillisecondOfNovember = {
    day: 'd:2026-11-30',
    dayEndMs: at('2026-12-01T00:00:00.000Z'),
    month: 'm:2026-11',
    monthEndMs: at('2026-12-01T00:00:00.000Z'),
  };
  expect(budgetPeriods(at('2026-11-30T23:59:59.999Z'))).toMatchObject(lastMillisecondOfNovember);
  expect(budgetPeriods(at('2026-12-01T00:00:00.000Z'))).toMatchObject({
    day: 'd:2026-12-01',
    dayEndMs: at('2026-12-02T00:00:00.000Z'),
    month: 'm:2026-12',
    monthEndMs: at('2027-01-01T00:00:00.000Z'),
  });
  // A clock stepped back (NTP) gets the earlier day again, not the one asked for last.
  expect(budgetPeriods(at('2026-11-30T23:59:59.999Z'))).toMatchObject(lastMillisecondOfNovember);
  expect(budgetPeriods(at('2026-11-30T00:00:00.000Z'))).toMatchObject({ day: 'd:2026-11-30' });
  expect(budgetPeriods(at('2026-11-29T23:59:59.999Z'))).toMatchObject({ day: 'd:2026-11-29' });
});

test('a year ends in December', () => {
  expect(budgetPeriods(at('2026-12-31T12:00:00.000Z'))).toMatchObject({
    day: 'd:2026-12-31',
    dayEndMs: at('2027-01-01T00:00:00.000Z'),
    month: 'm:2026-12',
    monthEndMs: at('2027-01-01T00:00:00.000Z'),
  });
});

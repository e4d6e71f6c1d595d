// The preload that stands in for a replica's wrong host clock (test/support/shifted-clock.ts): every wall
// clock the gateway reads moves by the offset, so the tests that rely on it cannot pass by accident.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { shiftedClock } from '../support/shifted-clock.ts';

const execFileAsync = promisify(execFile);
const HOUR_MS = 3_600_000;
// A child process starts within a few seconds even on a loaded machine.
const TOLERANCE_MS = 10_000;

const READ_CLOCKS = `console.log(JSON.stringify({
  dateNow: Date.now(),
  newDate: new Date().getTime(),
  dateString: Date.parse(Date()),
  timeOrigin: performance.timeOrigin + performance.now(),
  fixedMoment: new Date('2026-01-01T00:00:00Z').getTime(),
  isDate: new Date() instanceof Date,
}))`;

async function clocksOf(nodeArgs: string[], env: Record<string, string>) {
  const { stdout } = await execFileAsync(process.execPath, [...nodeArgs, '--eval', READ_CLOCKS], {
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout) as Record<string, number | boolean>;
}

test('an hour behind: Date.now, new Date(), Date() and performance.timeOrigin all move', async () => {
  const hourBehind = shiftedClock(-HOUR_MS);
  const clocks = await clocksOf(hourBehind.nodeArgs, hourBehind.env);
  const expected = Date.now() - HOUR_MS;
  for (const name of ['dateNow', 'newDate', 'dateString', 'timeOrigin']) {
    expect(Math.abs((clocks[name] as number) - expected), name).toBeLessThan(TOLERANCE_MS);
  }
  expect(clocks.fixedMoment).toBe(Date.UTC(2026, 0, 1));
  expect(clocks.isDate).toBe(true);
});

test('without the offset variable the preload leaves the clock alone', async () => {
  const clocks = await clocksOf(shiftedClock(-HOUR_MS).nodeArgs, {});
  expect(Math.abs((clocks.dateNow as number) - Date.now())).toBeLessThan(TOLERANCE_MS);
});

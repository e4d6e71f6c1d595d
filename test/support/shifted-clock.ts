// Preloaded into a child process (`node --import`) to set its wall clock off by GENGATE_TEST_CLOCK_OFFSET_MS,
// as a replica whose host clock is wrong: Date.now(), new Date(), Date() and performance.timeOrigin
// (which the in-memory limiter adds performance.now() to) all move; performance.now() itself is
// monotonic and stays. Only test processes load it, through shiftedClock() below.

/** The environment variable the preload reads its offset from, in milliseconds (negative: behind). */
export const CLOCK_OFFSET_VARIABLE = 'GENGATE_TEST_CLOCK_OFFSET_MS';

/** The node options and environment that start a child process with its clock off by `offsetMs`. */
export function shiftedClock(offsetMs: number): { nodeArgs: string[]; env: Record<string, string> } {
  return {
    nodeArgs: ['--import', import.meta.url],
    env: { [CLOCK_OFFSET_VARIABLE]: String(offsetMs) },
  };
}

function shiftWallClock(offsetMs: number): void {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const shiftedNow = () => realNow() + offsetMs;
  globalThis.Date = new Proxy(RealDate, {
    // `new Date()` reads the clock; `new Date(value)` names a moment and stays as it is.
    construct: (target, args: unknown[], newTarget: NewableFunction) =>
      Reflect.construct(target, args.length === 0 ? [shiftedNow()] : args, newTarget) as object,
    // `Date()` called without new returns the current time as a string.
    apply: () => new RealDate(shiftedNow()).toString(),
    get: (target, property, receiver) =>
      property === 'now' ? shiftedNow : (Reflect.get(target, property, receiver) as unknown),
  });
  Object.defineProperty(performance, 'timeOrigin', { value: performance.timeOrigin + offsetMs });
}

const offset = process.env[CLOCK_OFFSET_VARIABLE];
if (offset !== undefined) {
  const offsetMs = Number(offset);
  if (!Number.isFinite(offsetMs))
    throw new Error(`${CLOCK_OFFSET_VARIABLE} must be a number of milliseconds`);
  shiftWallClock(offsetMs);
}

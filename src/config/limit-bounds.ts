// The largest `limit × windowSeconds` a rate limit may have. The limiter (src/ratelimit/gcra.ts and its
// Lua twin) counts in µs with doubles: keeping debt + cost (at most 2 × L × W scaled) under 2^53 keeps all
// arithmetic exact. Configuration refuses larger limits at load; the limiter asserts the same bound.
/** The limiter's unit of time. */
export const MICROS_PER_SECOND = 1_000_000;
export const MAX_LIMIT_TIMES_WINDOW_SECONDS = Math.floor(2 ** 52 / MICROS_PER_SECOND);

// The Redis limiter (three replicas on one Redis) and the in-memory limiter against a small independent
// model of GCRA in exact rational arithmetic (BigInt), over seeded random sequences of time steps, costs,
// tenants and replicas. Time is driven through the script's test-only injected clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import { createMemoryRateLimiter } from '../../src/store/memory/rate-limiter.ts';
import type { LimitRequest, RateLimiter } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { manualClock, startTestLimiter, type TestLimiter } from './limiter-support.ts';

const STEPS = 400;
const SEEDS = [1, 2, 3];
const START_MICROS = 1_700_000_000_123_457;
const LIMITS = [
  { id: 'images', limit: 7, windowSeconds: 5 },
  { id: 'requests', limit: 13, windowSeconds: 11 },
] as const;
const MICROS = 1_000_000n;

// mulberry32: a tiny seeded PRNG, so a failure replays exactly.
function prng(seed: number): (below: number) => number {
  let state = seed;
  return (below) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/**
 * Textbook GCRA: a limit of L per W emits a unit every W/L; a request of cost c at time now is admitted
 * when max(TAT, now) + c·W/L − now ≤ W. TATs are kept exactly, as rationals with denominator L.
 */
function referenceModel() {
  const tats = new Map<string, bigint>(); // TAT × L, in µs × L
  return (tenant: string, nowMicros: number, requests: LimitRequest[]) => {
    const now = BigInt(nowMicros);
    if (requests.some((request) => request.cost > request.limit))
      return { outcome: 'cost_exceeds_limit', headers: {} };
    const rows = requests.map((request) => {
      const limit = BigInt(request.limit);
      const window = BigInt(request.windowSeconds) * MICROS;
      const key = `${tenant}/${request.id}`;
      const tat = tats.get(key) ?? 0n;
      const start = tat > now * limit ? tat : now * limit;
      const charged = start + BigInt(request.cost) * window;
      const fits = charged - now * limit <= limit * window;
      return { request, limit, window, key, start, charged, fits };
    });
    const admitted = rows.every((row) => row.fits);
    const states = rows.map((row) => {
      const tat = admitted ? row.charged : row.start;
      if (admitted) tats.set(row.key, row.charged);
      const debt = tat - now * row.limit;
      return {
        id: row.request.id,
        limit: row.request.limit,
        window: row.request.windowSeconds,
        remaining: Number((row.limit * row.window - debt) / row.window),
        reset: Number(ceilDiv(tat, row.limit * MICROS)),
        t: Number(ceilDiv(debt, row.limit * MICROS)),
        wait: row.fits || admitted ? 0n : row.charged - now * row.limit - row.limit * row.window,
      };
    });
    let binding = states[0]!;
    for (const state of states) {
      if (admitted) {
        const fewer = state.remaining < binding.remaining;
        if (fewer || (state.remaining === binding.remaining && state.reset > binding.reset)) binding = state;
      } else if (state.wait > binding.wait) binding = state;
    }
    const headers: Record<string, string> = {
      'X-RateLimit-Limit': String(binding.limit),
      'X-RateLimit-Remaining': String(binding.remaining),
      'X-RateLimit-Reset': String(binding.reset),
      'RateLimit-Policy': states
        .map((state) => `"${state.id}";q=${state.limit};w=${state.window}`)
        .join(', '),
      RateLimit: states.map((state) => `"${state.id}";r=${state.remaining};t=${state.t}`).join(', '),
    };
    if (!admitted) headers['Retry-After'] = String(ceilDiv(binding.wait, BigInt(binding.limit) * MICROS));
    return { outcome: admitted ? 'admitted' : 'rate_limited', headers };
  };
}

describe('limiters agree with an independent GCRA model', () => {
  let redis: RedisServer;
  const clock = manualClock(START_MICROS);
  let replicas: TestLimiter[];

  beforeAll(async () => {
    redis = await startRedisServer();
    replicas = await Promise.all(
      [0, 1, 2].map(() => startTestLimiter({ url: redis.url }, { scriptClockForTests: clock.now })),
    );
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await redis.stop();
  });

  it.each(SEEDS)(
    'seed %i: every decision and header matches, on every replica and in memory',
    async (seed) => {
      const random = prng(seed);
      const model = referenceModel();
      const memory: RateLimiter = createMemoryRateLimiter({ nowMicros: clock.now });
      const outcomes = new Set<string>();
      for (let step = 0; step < STEPS; step++) {
        // Mostly bursts at the same instant or sub-second steps, sometimes long idle gaps.
        const gap = [0, random(1_000_000), random(3_000_000), random(20_000_000)][random(4)]!;
        clock.advance(gap);
        const tenant = `seed-${seed}-tenant-${random(2)}`;
        const applicable = random(3) === 0 ? [LIMITS[1]] : LIMITS;
        const requests = applicable.map((limit) => ({
          ...limit,
          cost: limit.id === 'requests' ? 1 : random(9),
        }));
        const expected = model(tenant, clock.now(), requests);
        const fromRedis = await replicas[random(replicas.length)]!.limiter.check(tenant, requests);
        const fromMemory = await memory.check(tenant, requests);
        const context = `step ${step}, now ${clock.now()}, ${JSON.stringify(requests)}`;
        expect({ outcome: fromRedis.outcome, headers: rateLimitHeaders(fromRedis) }, context).toEqual(
          expected,
        );
        expect({ outcome: fromMemory.outcome, headers: rateLimitHeaders(fromMemory) }, context).toEqual(
          expected,
        );
        outcomes.add(expected.outcome);
      }
      // The sequence is only worth something if it reached every kind of decision.
      expect([...outcomes].sort()).toEqual(['admitted', 'cost_exceeds_limit', 'rate_limited']);
    },
  );
});

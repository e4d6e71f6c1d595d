// Golden decision and header sequences, worked out by hand (docs/rate-limits.md explains the arithmetic).
// The Redis script runs with the test-only injected "now" so every value is fixed; the in-memory limiter
// runs the same sequences on the same clock and must give the very same headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import { createMemoryRateLimiter } from '../../src/store/memory/rate-limiter.ts';
import type { LimitRequest, RateLimiter } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { manualClock, startTestLimiter, type TestLimiter } from './limiter-support.ts';

// 1_700_000_000.5 s: half a second past a whole second, so rounding up is visible everywhere.
const T0_MICROS = 1_700_000_000_500_000;

type Step = {
  advanceMicros: number;
  limits: LimitRequest[];
  status: string;
  headers: Record<string, string>;
};

const smallLimit = (cost: number): LimitRequest[] => [{ id: 'requests', limit: 3, windowSeconds: 6, cost }];
const weighted = (samples: number): LimitRequest[] => [
  { id: 'images', limit: 10, windowSeconds: 60, cost: samples },
  { id: 'requests', limit: 100, windowSeconds: 60, cost: 1 },
];

const EXHAUSTION: Step[] = [
  { advanceMicros: 0, limits: smallLimit(1), status: 'admitted', headers: small(2, 1_700_000_003, 2) },
  { advanceMicros: 0, limits: smallLimit(1), status: 'admitted', headers: small(1, 1_700_000_005, 4) },
  { advanceMicros: 0, limits: smallLimit(1), status: 'admitted', headers: small(0, 1_700_000_007, 6) },
  {
    advanceMicros: 0,
    limits: smallLimit(1),
    status: 'rate_limited',
    headers: { ...small(0, 1_700_000_007, 6), 'Retry-After': '2' },
  },
  // 1.5 s later: the reset has not moved, `t` counted down, and 0.5 s left rounds up to 1, never 0.
  {
    advanceMicros: 1_500_000,
    limits: smallLimit(1),
    status: 'rate_limited',
    headers: { ...small(0, 1_700_000_007, 5), 'Retry-After': '1' },
  },
  { advanceMicros: 500_000, limits: smallLimit(1), status: 'admitted', headers: small(0, 1_700_000_009, 6) },
];

const WEIGHTED: Step[] = [
  {
    advanceMicros: 0,
    limits: weighted(4),
    status: 'admitted',
    headers: pair([6, 1_700_000_025, 24], [99, 1]),
  },
  {
    advanceMicros: 0,
    limits: weighted(4),
    status: 'admitted',
    headers: pair([2, 1_700_000_049, 48], [98, 2]),
  },
  // 4 samples do not fit in 2: nothing is charged (requests stays at 98), and 12 s frees 2 units.
  {
    advanceMicros: 0,
    limits: weighted(4),
    status: 'rate_limited',
    headers: { ...pair([2, 1_700_000_049, 48], [98, 2]), 'Retry-After': '12' },
  },
  {
    advanceMicros: 0,
    limits: weighted(2),
    status: 'admitted',
    headers: pair([0, 1_700_000_061, 60], [97, 2]),
  },
];

function small(remaining: number, reset: number, t: number): Record<string, string> {
  return {
    'X-RateLimit-Limit': '3',
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': String(reset),
    'RateLimit-Policy': '"requests";q=3;w=6',
    RateLimit: `"requests";r=${remaining};t=${t}`,
  };
}

// The images limit binds throughout: it always has fewer units left than requests.
function pair(images: [number, number, number], requests: [number, number]): Record<string, string> {
  const [remaining, reset, t] = images;
  return {
    'X-RateLimit-Limit': '10',
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': String(reset),
    'RateLimit-Policy': '"images";q=10;w=60, "requests";q=100;w=60',
    RateLimit: `"images";r=${remaining};t=${t}, "requests";r=${requests[0]};t=${requests[1]}`,
  };
}

describe.each(['redis', 'memory'] as const)('golden sequences (%s)', (kind) => {
  let redis: RedisServer;
  const opened: TestLimiter[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(opened.map((limiter) => limiter.close()));
    await redis.stop();
  });

  async function limiterOn(clock: ReturnType<typeof manualClock>): Promise<RateLimiter> {
    if (kind === 'memory') return createMemoryRateLimiter({ nowMicros: clock.now });
    const started = await startTestLimiter({ url: redis.url }, { scriptClockForTests: clock.now });
    opened.push(started);
    return started.limiter;
  }

  async function play(tenant: string, steps: Step[]): Promise<void> {
    const clock = manualClock(T0_MICROS);
    const limiter = await limiterOn(clock);
    for (const step of steps) {
      clock.advance(step.advanceMicros);
      const decision = await limiter.check(tenant, step.limits);
      expect({ status: decision.outcome, headers: rateLimitHeaders(decision) }).toEqual({
        status: step.status,
        headers: step.headers,
      });
    }
  }

  it('a fresh tenant exhausts its limit, is refused honestly, and is admitted again', async () => {
    await play('fresh', EXHAUSTION);
  });

  it('weighted cost charges samples, and a refusal charges no limit at all', async () => {
    await play('weighted', WEIGHTED);
  });

  it('a cost above a whole limit is refused without Retry-After and without touching the store', async () => {
    const limiter = await limiterOn(manualClock(T0_MICROS));
    const decision = await limiter.check('too-big', weighted(11));
    expect(decision).toEqual({
      outcome: 'cost_exceeds_limit',
      limits: [],
      binding: undefined,
      exceeded: { id: 'images', limit: 10, windowSeconds: 60, cost: 11 },
      exact: false,
    });
    expect(rateLimitHeaders(decision)).toEqual({});
    if (kind === 'redis') expect(await redis.client().keys('*too-big*')).toEqual([]);
  });

  it('the admitted decision carries every limit state and the binding one', async () => {
    const limiter = await limiterOn(manualClock(T0_MICROS));
    const decision = await limiter.check('shape', weighted(1));
    const images = {
      id: 'images',
      limit: 10,
      windowSeconds: 60,
      cost: 1,
      remaining: 9,
      resetEpochSeconds: 1_700_000_007,
      secondsUntilFull: 6,
    };
    expect(decision).toEqual({
      outcome: 'admitted',
      exact: true,
      binding: images,
      limits: [
        images,
        {
          id: 'requests',
          limit: 100,
          windowSeconds: 60,
          cost: 1,
          remaining: 99,
          resetEpochSeconds: 1_700_000_002,
          secondsUntilFull: 1,
        },
      ],
    });
  });
});

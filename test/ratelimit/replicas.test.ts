// Several gateway replicas (separate connections) on one Redis: limits hold exactly under heavy
// concurrency, every replica gives the same headers, and a replica's own clock plays no part.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { shiftedClock } from '../support/shifted-clock.ts';
import { startTestLimiter, type TestLimiter } from './limiter-support.ts';

const execFileAsync = promisify(execFile);
// An hour's window: a unit comes back only every 36 s, so a burst slowed by a busy machine cannot earn
// an extra one while it runs.
const HUNDRED_PER_HOUR: LimitRequest[] = [{ id: 'requests', limit: 100, windowSeconds: 3600, cost: 1 }];
const PARALLEL_CHECKS = 500;
const HOUR_MS = 3_600_000;

describe('replicas sharing one Redis', () => {
  let redis: RedisServer;
  let replicas: TestLimiter[];

  beforeAll(async () => {
    redis = await startRedisServer();
    replicas = await Promise.all([0, 1, 2].map(() => startTestLimiter({ url: redis.url })));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await redis.stop();
  });

  it.each([2, 3])(
    '%i replicas admit exactly 100 of 500 parallel checks and then agree on the headers',
    async (count) => {
      const tenant = `parallel-${count}`;
      const active = replicas.slice(0, count);
      const decisions = await Promise.all(
        Array.from({ length: PARALLEL_CHECKS }, (_, index) =>
          active[index % count]!.limiter.check(tenant, HUNDRED_PER_HOUR),
        ),
      );
      expect(decisions.filter((decision) => decision.outcome === 'admitted')).toHaveLength(100);
      expect(decisions.every((decision) => decision.exact)).toBe(true);

      const refusals = await Promise.all(
        active.map((replica) => replica.limiter.check(tenant, HUNDRED_PER_HOUR)),
      );
      const informative = refusals.map((decision) => {
        const {
          'X-RateLimit-Limit': limit,
          'X-RateLimit-Remaining': remaining,
          'X-RateLimit-Reset': reset,
        } = rateLimitHeaders(decision);
        return { outcome: decision.outcome, limit, remaining, reset };
      });
      expect(new Set(informative.map((headers) => JSON.stringify(headers))).size).toBe(1);
      expect(informative[0]).toMatchObject({ outcome: 'rate_limited', limit: '100', remaining: '0' });
    },
  );

  it('a replica whose clock is an hour behind gives the same headers as the others', async () => {
    const limits: LimitRequest[] = [{ id: 'images', limit: 5, windowSeconds: 600, cost: 5 }];
    const local = rateLimitHeaders(await replicas[0]!.limiter.check('clock', limits));
    const hourBehind = shiftedClock(-HOUR_MS);
    const childStartedMs = Date.now();
    const { stdout } = await execFileAsync(
      process.execPath,
      [
        ...hourBehind.nodeArgs,
        new URL('limiter-child.ts', import.meta.url).pathname,
        redis.url,
        'clock',
        JSON.stringify(limits),
      ],
      { env: { ...process.env, ...hourBehind.env } },
    );
    const child = JSON.parse(stdout) as { processNowMs: number; headers: Record<string, string> };
    expect(Date.now() - child.processNowMs).toBeGreaterThan(HOUR_MS - 60_000);
    const again = rateLimitHeaders(await replicas[1]!.limiter.check('clock', limits));
    const secondsBetweenChecks = Math.ceil((Date.now() - childStartedMs) / 1000);

    // The absolute fields match exactly, whatever the replica's clock says.
    const { 'Retry-After': childRetryAfter, RateLimit: childRateLimit, ...childAbsolute } = child.headers;
    const { 'Retry-After': againRetryAfter, RateLimit: againRateLimit, ...againAbsolute } = again;
    expect(childAbsolute).toEqual(againAbsolute);
    expect(child.headers['X-RateLimit-Reset']).toBe(local['X-RateLimit-Reset']);
    expect(child.headers['X-RateLimit-Remaining']).toBe('0');
    // The relative ones count down from the Redis clock, so the later check may read up to the whole
    // seconds that passed between the two checks less (regression: CI saw 600 against 599).
    const lead = Number(childRetryAfter) - Number(againRetryAfter);
    expect(lead).toBeGreaterThanOrEqual(0);
    expect(lead).toBeLessThanOrEqual(secondsBetweenChecks);
    expect(childRateLimit).toBe(`"images";r=0;t=${childRetryAfter}`);
    expect(againRateLimit).toBe(`"images";r=0;t=${againRetryAfter}`);
  });
});

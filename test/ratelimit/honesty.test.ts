// Headers that never lie, on real time and Redis TIME (no injected clock): waiting Retry-After is enough,
// the reset does not move while a client only gets refused, and sub-second waits never round to 0.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import type { LimitRequest, RateDecision } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { startTestLimiter, type TestLimiter } from './limiter-support.ts';

const TWO_PER_SECOND: LimitRequest[] = [{ id: 'requests', limit: 2, windowSeconds: 1, cost: 1 }];

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

describe('honest rate-limit headers', () => {
  let redis: RedisServer;
  let replica: TestLimiter;

  beforeAll(async () => {
    redis = await startRedisServer();
    replica = await startTestLimiter({ url: redis.url });
  });
  afterAll(async () => {
    await replica.close();
    await redis.stop();
  });

  async function storeSeconds(): Promise<number> {
    const [seconds, micros] = await redis.client().time();
    return Number(seconds) + Number(micros) / 1_000_000;
  }

  it('after a refusal, a request sent Retry-After seconds later is admitted', async () => {
    const limits: LimitRequest[] = [{ id: 'images', limit: 3, windowSeconds: 2, cost: 2 }];
    // The second check is refused only within 2/3 s of the first; a machine too busy for that gets
    // another pair, on a fresh tenant.
    let tenant = '';
    let refused: RateDecision | undefined;
    await waitFor('a refusal right after an admission', async () => {
      tenant = `retry-${randomUUID()}`;
      expect((await replica.limiter.check(tenant, limits)).outcome).toBe('admitted');
      refused = await replica.limiter.check(tenant, limits);
      return refused.outcome === 'rate_limited';
    });
    const retryAfter = Number(rateLimitHeaders(refused!)['Retry-After']);
    expect(retryAfter).toBe(1);
    await sleep(retryAfter * 1000);
    expect((await replica.limiter.check(tenant, limits)).outcome).toBe('admitted');
  });

  it('while only refused, Reset stays put, t and Retry-After only count down, and neither reaches 0', async () => {
    // One run: the limit used up, then refused until it has room again. A loaded machine may check too
    // rarely in a run to see much of it; then another tenant runs again.
    let observed: Record<string, string>[] = [];
    let run = 0;
    await waitFor('a run of refusals long enough to judge', async () => {
      observed = await refusalsUntilRoom(`idle-${run++}`);
      return observed.length > 10;
    });
    expect(observed.length).toBeGreaterThan(10);
    const first = observed[0]!;
    for (const [index, headers] of observed.entries()) {
      expect(headers['X-RateLimit-Reset']).toBe(first['X-RateLimit-Reset']);
      expect(headers['X-RateLimit-Remaining']).toBe('0');
      expect(Number(headers['Retry-After'])).toBeGreaterThanOrEqual(1);
      expect(headers.RateLimit).toMatch(/^"requests";r=0;t=[1-9]\d*$/);
      if (index > 0) {
        expect(Number(headers['Retry-After'])).toBeLessThanOrEqual(
          Number(observed[index - 1]!['Retry-After']),
        );
        expect(tOf(headers)).toBeLessThanOrEqual(tOf(observed[index - 1]!));
      }
    }
  });

  /** The headers of every refusal from the moment `tenant` uses up its limit until it has room again. */
  async function refusalsUntilRoom(tenant: string): Promise<Record<string, string>[]> {
    for (let i = 0; i < 2; i++) await replica.limiter.check(tenant, TWO_PER_SECOND);
    const observed: Record<string, string>[] = [];
    for (;;) {
      const decision = await replica.limiter.check(tenant, TWO_PER_SECOND);
      if (decision.outcome !== 'rate_limited') return observed;
      observed.push(rateLimitHeaders(decision));
      await sleep(5);
    }
  }

  it('Reset is never in the past nor more than one window ahead of the store clock', async () => {
    const limits: LimitRequest[] = [{ id: 'video-seconds', limit: 30, windowSeconds: 3, cost: 7 }];
    for (let i = 0; i < 8; i++) {
      const before = await storeSeconds();
      const headers = rateLimitHeaders(await replica.limiter.check('bounds', limits));
      const after = await storeSeconds();
      const reset = Number(headers['X-RateLimit-Reset']);
      expect(reset).toBeGreaterThanOrEqual(before);
      expect(reset).toBeLessThanOrEqual(Math.ceil(after) + 3);
    }
  });
});

function tOf(headers: Record<string, string>): number {
  return Number(/;t=(\d+)/.exec(headers.RateLimit ?? '')?.[1]);
}

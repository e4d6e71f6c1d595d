// Poisoned state never locks a tenant out for more than one window, and every key the limiter writes
// expires by itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import { rateLimitKey } from '../../src/store/redis/keys.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { startTestLimiter, type TestLimiter } from './limiter-support.ts';

const WINDOW_SECONDS = 60;
const TEN_PER_MINUTE: LimitRequest[] = [
  { id: 'requests', limit: 10, windowSeconds: WINDOW_SECONDS, cost: 1 },
];
const PREFIX = 'gengate:';

describe('state that heals itself', () => {
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

  const keyOf = (tenant: string) => PREFIX + rateLimitKey(tenant, 'requests');

  async function storeMicros(): Promise<number> {
    const [seconds, micros] = await redis.client().time();
    return Number(seconds) * 1_000_000 + Number(micros);
  }

  it.each([
    ['garbage', 'not a state'],
    ['a negative number', '-5:0'],
    ['a number with a fraction', '1.5:0'],
    ['one part only', '1700000000000000'],
  ])('a %s value counts as fresh and is replaced by a valid state with a TTL', async (_name, value) => {
    const tenant = `garbage-${_name.replaceAll(' ', '-')}`;
    await redis.client().set(keyOf(tenant), value);
    const decision = await replica.limiter.check(tenant, TEN_PER_MINUTE);
    expect(decision.outcome).toBe('admitted');
    expect(decision.binding?.remaining).toBe(9);
    expect(await redis.client().get(keyOf(tenant))).toMatch(/^\d+:\d+$/);
    expect(await redis.client().pttl(keyOf(tenant))).toBeGreaterThan(0);
  });

  it('a key of another type is garbage too', async () => {
    await redis.client().hset(keyOf('wrong-type'), 'field', 'value');
    expect((await replica.limiter.check('wrong-type', TEN_PER_MINUTE)).outcome).toBe('admitted');
  });

  it('a state far in the future refuses for at most one window and is rewritten to one window', async () => {
    const now = await storeMicros();
    await redis.client().set(keyOf('future'), `${now + 100 * WINDOW_SECONDS * 1_000_000}:0`);
    const decision = await replica.limiter.check('future', TEN_PER_MINUTE);
    expect(decision.outcome).toBe('rate_limited');
    const headers = rateLimitHeaders(decision);
    const nowSeconds = Math.ceil((await storeMicros()) / 1_000_000);
    expect(Number(headers['X-RateLimit-Reset'])).toBeLessThanOrEqual(nowSeconds + WINDOW_SECONDS);
    expect(Number(headers['Retry-After'])).toBeLessThanOrEqual(WINDOW_SECONDS);
    const [tat] = (await redis.client().get(keyOf('future')))!.split(':');
    expect(Number(tat) - now).toBeLessThanOrEqual(WINDOW_SECONDS * 1_000_000 + 1_000_000);
    expect(await redis.client().pttl(keyOf('future'))).toBeGreaterThan(0);
  });

  it('a valid state without a TTL gets one, even when the request is refused', async () => {
    const now = await storeMicros();
    await redis.client().set(keyOf('no-ttl'), `${now + WINDOW_SECONDS * 1_000_000}:0`);
    expect((await replica.limiter.check('no-ttl', TEN_PER_MINUTE)).outcome).toBe('rate_limited');
    const ttl = await redis.client().pttl(keyOf('no-ttl'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual((WINDOW_SECONDS + 1) * 1000);
  });

  it('every key has a TTL of at most one window plus the margin after use', async () => {
    const limits: LimitRequest[] = [
      { id: 'images', limit: 120, windowSeconds: 60, cost: 4 },
      { id: 'requests', limit: 600, windowSeconds: 60, cost: 1 },
      { id: 'video-seconds', limit: 300, windowSeconds: 3600, cost: 12 },
    ];
    for (const tenant of ['ttl-a', 'ttl-b'])
      for (let i = 0; i < 5; i++) await replica.limiter.check(tenant, limits);
    const keys = await redis.client().keys(`${PREFIX}{tenant:ttl-*`);
    expect(keys).toHaveLength(6);
    for (const key of keys) {
      const ttl = await redis.client().pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3601 * 1000);
    }
  });
});

// The store dies, freezes and comes back: requests never wait past the command timeout, fail-open keeps
// serving without headers it cannot stand behind, fail-closed refuses with Retry-After, and both return
// to exact decisions by themselves.
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import type { LimitRequest, RateDecision } from '../../src/ratelimit/types.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { startTestLimiter, TEST_COMMAND_TIMEOUT_MS, type TestLimiter } from './limiter-support.ts';

const LIMITS: LimitRequest[] = [{ id: 'requests', limit: 1000, windowSeconds: 60, cost: 1 }];
const PROBE_INTERVAL_MS = 50;
// Scheduling slack on a busy two-core machine (a collection, a descheduled worker), on top of the command
// timeout. Still far below what the failures tested would cost a check that waited on the store: the
// reconnection backoff (up to 2 s) or the rest of a 2 s DEBUG SLEEP.
const TIMING_MARGIN_MS = 600;
const LOAD_BATCH = 20;
// A PING left unanswered this long: Redis is asleep.
const SLEEP_SEEN_AFTER_MS = 50;

describe('store failures', () => {
  let redis: RedisServer | undefined;
  let replica: TestLimiter | undefined;

  afterEach(async () => {
    await replica?.close();
    await redis?.stop();
  });

  async function timedCheck(tenant: string): Promise<{ decision: RateDecision; ms: number }> {
    const started = performance.now();
    const decision = await replica!.limiter.check(tenant, LIMITS);
    return { decision, ms: performance.now() - started };
  }

  async function degradedGauge(): Promise<number | undefined> {
    const metric = await replica!.registry.getSingleMetric('gengate_store_degraded')?.get();
    return metric?.values[0]?.value;
  }

  async function checkUntil(tenant: string, condition: (decision: RateDecision) => boolean): Promise<void> {
    await waitFor('the expected decision', async () => {
      const batch = await Promise.all(Array.from({ length: LOAD_BATCH }, () => timedCheck(tenant)));
      for (const { ms } of batch) expect(ms).toBeLessThan(TEST_COMMAND_TIMEOUT_MS + TIMING_MARGIN_MS);
      return batch.every(({ decision }) => condition(decision));
    });
  }

  it('fail-open: killed mid-load, keeps answering without headers, then recovers exact decisions', async () => {
    redis = await startRedisServer();
    replica = await startTestLimiter(
      { url: redis.url },
      { failMode: 'open', commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, probeIntervalMs: PROBE_INTERVAL_MS },
    );
    const load = Promise.all(Array.from({ length: 200 }, () => timedCheck('open')));
    await redis.kill();
    for (const { decision } of await load) expect(decision.outcome).toBe('admitted');

    await checkUntil('open', (decision) => !decision.exact);
    const degraded = await replica.limiter.check('open', LIMITS);
    expect(degraded).toMatchObject({ outcome: 'admitted', exact: false });
    expect(rateLimitHeaders(degraded)).toEqual({});
    expect(replica.limiter.degraded).toBe(true);
    expect(await degradedGauge()).toBe(1);

    await redis.restart();
    await checkUntil('open', (decision) => decision.exact);
    expect(replica.limiter.degraded).toBe(false);
    expect(await degradedGauge()).toBe(0);
    expect(rateLimitHeaders(await replica.limiter.check('open', LIMITS))['X-RateLimit-Limit']).toBe('1000');
  });

  it('fail-open: the per-replica fallback admits only its share of the limit', async () => {
    redis = await startRedisServer();
    replica = await startTestLimiter(
      { url: redis.url },
      {
        failMode: 'open',
        commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS,
        probeIntervalMs: PROBE_INTERVAL_MS,
        fallbackReplicas: 4,
      },
    );
    await redis.kill();
    const limits: LimitRequest[] = [{ id: 'requests', limit: 10, windowSeconds: 60, cost: 1 }];
    const decisions = await Promise.all(
      Array.from({ length: 10 }, () => replica!.limiter.check('share', limits)),
    );
    // The first check finds the store dead and is answered by the fallback like the others: ceil(10 / 4).
    expect(decisions.filter((decision) => decision.outcome === 'admitted')).toHaveLength(3);
    const refused = decisions.find((decision) => decision.outcome === 'rate_limited')!;
    expect(rateLimitHeaders(refused)).toEqual({ 'Retry-After': '20' });
  });

  it('fail-closed: answers store_unavailable with Retry-After, then recovers', async () => {
    redis = await startRedisServer();
    replica = await startTestLimiter(
      { url: redis.url },
      { failMode: 'closed', commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, probeIntervalMs: PROBE_INTERVAL_MS },
    );
    expect((await replica.limiter.check('closed', LIMITS)).exact).toBe(true);
    await redis.kill();
    await checkUntil('closed', (decision) => decision.outcome === 'store_unavailable');
    const refused = await replica.limiter.check('closed', LIMITS);
    expect(refused).toEqual({
      outcome: 'store_unavailable',
      limits: [],
      binding: undefined,
      exact: false,
      retryAfterSeconds: 1,
    });
    expect(rateLimitHeaders(refused)).toEqual({ 'Retry-After': '1' });
    expect(replica.limiter.degraded).toBe(true);

    await redis.restart();
    await checkUntil('closed', (decision) => decision.outcome === 'admitted' && decision.exact);
    expect(replica.limiter.degraded).toBe(false);
  });

  it('a frozen Redis (DEBUG SLEEP 2) never holds a check past the command timeout', async () => {
    redis = await startRedisServer(['--enable-debug-command', 'yes']);
    replica = await startTestLimiter(
      { url: redis.url },
      { failMode: 'closed', commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, probeIntervalMs: PROBE_INTERVAL_MS },
    );
    expect((await timedCheck('frozen')).decision.exact).toBe(true);
    const freezer = redis.client();
    await waitFor('freezer connected', () => freezer.status === 'ready');
    const frozen = freezer.call('DEBUG', 'SLEEP', '2');
    // The sleep has begun once Redis leaves another client's PING unanswered for a while.
    const probe = redis.client();
    await waitFor('Redis to sleep', () =>
      Promise.race([
        // Answered once the sleep ends, or refused when the test is over first: either way, not asleep.
        probe.ping().then(
          () => false,
          () => false,
        ),
        new Promise<boolean>((resolve) => setTimeout(resolve, SLEEP_SEEN_AFTER_MS, true)),
      ]),
    );
    const during = await Promise.all(Array.from({ length: LOAD_BATCH }, () => timedCheck('frozen')));
    for (const { decision, ms } of during) {
      expect(decision.outcome).toBe('store_unavailable');
      expect(ms).toBeLessThan(TEST_COMMAND_TIMEOUT_MS + TIMING_MARGIN_MS);
    }
    const errors = await replica.registry.getSingleMetric('gengate_store_errors_total')?.get();
    // Every check in flight when the store froze waited and failed; none after the breaker opened did.
    expect(errors?.values).toContainEqual({ labels: { operation: 'rate_limit_check' }, value: LOAD_BATCH });
    await frozen;
    await checkUntil('frozen', (decision) => decision.outcome === 'admitted' && decision.exact);
  });
});

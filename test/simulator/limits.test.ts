// Per-account limits [doc]: at most 25 requests queued at once, and requests per minute with
// X-RateLimit-* headers whose Reset is absolute UTC epoch seconds.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { AUTH, call, postImage, postVideo, startTestSimulator } from './simulator-client.ts';

let simulator: SimulatorServer | undefined;
afterEach(async () => {
  await simulator?.close();
  simulator = undefined;
});

describe('at most 25 queued requests per account', () => {
  test('the 26th unfinished request is refused with Retry-After until one finishes', async () => {
    let now = Date.parse('2026-05-01T08:00:00.000Z');
    simulator = await startTestSimulator({ clock: () => now, queuedMs: 10_000, processingMs: 20_000 });
    for (let index = 0; index < 25; index++) {
      expect(
        (await (index % 2 === 0 ? postImage(simulator, {}) : postVideo(simulator, { duration: 3 }))).status,
      ).toBe(200);
    }
    now += 4_500;
    const refused = await postImage(simulator, {});
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('26');
    expect(refused.body).toEqual({
      status: 429,
      error: {
        code: 'too_many_queued_requests',
        type: 'rate_limit_error',
        message: 'at most 25 requests may be queued at once',
      },
    });
    expect((await postImage(simulator, {}, AUTH.beta)).status).toBe(200);

    now += 25_500;
    expect((await postImage(simulator, {})).status).toBe(200);
  });

  test('the limit is configurable', async () => {
    simulator = await startTestSimulator({ queuedMs: 60_000, maxQueued: 2 });
    expect((await postImage(simulator, {})).status).toBe(200);
    expect((await postImage(simulator, {})).status).toBe(200);
    expect((await postImage(simulator, {})).status).toBe(429);
  });

  test('a cancelled job frees its place at once', async () => {
    simulator = await startTestSimulator({ queuedMs: 60_000, maxQueued: 1 });
    const requestId = randomUUID();
    expect((await postVideo(simulator, { requestId, duration: 3 })).status).toBe(200);
    expect((await postImage(simulator, {})).status).toBe(429);
    expect((await call(simulator, 'DELETE', `/v1/videos/generations/${requestId}`)).status).toBe(200);
    expect((await postImage(simulator, {})).status).toBe(200);
  });

  // Regression: the check read every job the account ever made, so that each create cost more than the
  // last; under a flood of thousands the simulator's thread took the CPU the load generator needed. Every
  // stage of a job is computed from the clock, so the clock's readings count the jobs a create looks at.
  test('what a create reads does not grow with the jobs the account has finished', async () => {
    let clockReadings = 0;
    simulator = await startTestSimulator({
      clock: () => {
        clockReadings += 1;
        return Date.parse('2026-05-01T08:00:00.000Z');
      },
      requestsPerMinute: 100_000,
    });
    const readingsOfACreate = async () => {
      const before = clockReadings;
      expect((await postImage(simulator!, {})).status).toBe(200);
      return clockReadings - before;
    };
    await readingsOfACreate();
    const afterOne = await readingsOfACreate();
    for (let index = 0; index < 200; index++) await postImage(simulator, {});
    expect(await readingsOfACreate()).toBe(afterOne);
  });
});

describe('requests per minute', () => {
  test('every authenticated answer carries the headers; Reset is epoch seconds within the minute', async () => {
    simulator = await startTestSimulator({ requestsPerMinute: 3 });
    const before = Date.now() / 1000;
    const answers = [
      await call(simulator, 'GET', '/v1/account/keys'),
      await postImage(simulator, { samples: 99 }),
      await call(simulator, 'GET', '/v1/account/usage'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 400, 200]);
    expect(answers.map((answer) => answer.headers.get('x-ratelimit-limit'))).toEqual(['3', '3', '3']);
    expect(answers.map((answer) => answer.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0']);
    const reset = answers[0]!.headers.get('x-ratelimit-reset')!;
    expect(reset).toMatch(/^\d+$/);
    expect(Number(reset)).toBeGreaterThan(before);
    expect(Number(reset)).toBeLessThanOrEqual(before + 60);
    expect(answers.map((answer) => answer.headers.get('x-ratelimit-reset'))).toEqual([reset, reset, reset]);

    const refused = await call(simulator, 'GET', '/v1/account/keys');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      status: 429,
      error: {
        code: 'rate_limit_exceeded',
        type: 'rate_limit_error',
        message: 'at most 3 requests per minute are allowed',
      },
    });
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(reset);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    const other = await call(simulator, 'GET', '/v1/account/keys', { auth: AUTH.beta });
    expect(other.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  test('the window resets after 60 seconds, on a whole second', async () => {
    let now = Date.parse('2026-05-01T08:00:00.250Z');
    simulator = await startTestSimulator({ clock: () => now, requestsPerMinute: 1 });
    const first = await call(simulator, 'GET', '/v1/account/keys');
    expect(first.headers.get('x-ratelimit-reset')).toBe(
      String(Date.parse('2026-05-01T08:01:00.000Z') / 1000),
    );
    now = Date.parse('2026-05-01T08:00:59.100Z');
    const refused = await call(simulator, 'GET', '/v1/account/keys');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    now = Date.parse('2026-05-01T08:01:00.000Z');
    const again = await call(simulator, 'GET', '/v1/account/keys');
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-reset')).toBe(
      String(Date.parse('2026-05-01T08:02:00.000Z') / 1000),
    );
  });

  test('unauthenticated answers carry no rate-limit headers and count nothing', async () => {
    simulator = await startTestSimulator({ requestsPerMinute: 1 });
    const refused = await call(simulator, 'GET', '/v1/account/keys', { auth: 'Bearer nope' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
    expect((await call(simulator, 'GET', '/v1/account/keys')).status).toBe(200);
  });
});

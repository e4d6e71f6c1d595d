// docs/ownership.md#store-failures with a frozen Redis in fail-closed mode: creates refused with 503
// store_unavailable leave no claim and no charge behind, even though their admission commands were
// already on their way and ran (or could have run) once Redis resumed. Regression test for the 409
// "still in progress or its outcome is unknown" answered to the same requestId after the recovery.
import { randomUUID } from 'node:crypto';
import { expect, test } from 'vitest';
import {
  useGatewayOnRedisPerTest,
  type GatewayHarness,
  type GatewayOnRedis,
} from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';

// A long window: within the test nothing refills a whole unit, so Remaining counts charges exactly.
const LIMIT = 100;
const LIMITS = `[{ id: requests, routes: ["*"], cost: requests, limit: ${LIMIT}, windowSeconds: 3600 }]`;
const REFUSED_CREATES = 30;

const startGatewayOnRedis = useGatewayOnRedisPerTest();

async function create(gateway: GatewayHarness, requestId: string) {
  const response = await fetch(`${gateway.url}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.keys.alpha}`, 'content-type': 'application/json' },
    body: JSON.stringify({ requestId, samples: 1 }),
  });
  return {
    status: response.status,
    remaining: response.headers.get('x-ratelimit-remaining'),
    body: await response.json(),
  };
}

async function startFailClosed(): Promise<GatewayOnRedis> {
  const { redis, harness } = await startGatewayOnRedis({
    redisArgs: ['--enable-debug-command', 'yes'],
    storeYaml: (url) => `{ kind: redis, failMode: closed, redis: { url: "${url}", commandTimeoutMs: 100 } }`,
    alphaLimitsYaml: LIMITS,
  });
  // The first create teaches the gateway the store's clock, as any earlier traffic would.
  expect(await create(harness, randomUUID())).toMatchObject({ status: 200, remaining: String(LIMIT - 1) });
  return { redis, harness };
}

/** Creates sent while the store cannot answer, all refused; then the same ids once it answers again. */
async function refusedThenRetried(
  gateway: GatewayHarness,
  freeze: () => Promise<void>,
  thaw: () => Promise<void>,
): Promise<void> {
  const requestIds = Array.from({ length: REFUSED_CREATES }, () => randomUUID());
  await freeze();
  const refused = await Promise.all(requestIds.map((requestId) => create(gateway, requestId)));
  for (const { status, body } of refused) {
    expect(status).toBe(503);
    expect(body).toEqual({
      status: 503,
      error: {
        code: 'store_unavailable',
        type: 'unavailable_error',
        message: expect.stringMatching(/store is unavailable; retry shortly$/) as unknown,
      },
    });
  }
  await thaw();
  await waitFor('the store breaker to close', () => !gateway.limiter.degraded);

  const retried = await Promise.all(requestIds.map((requestId) => create(gateway, requestId)));
  expect(retried.map(({ status }) => status)).toEqual(requestIds.map(() => 200));
  // Nothing was charged for the refused creates: 1 before, 30 retried, and this one.
  expect((await create(gateway, randomUUID())).remaining).toBe(String(LIMIT - 2 - REFUSED_CREATES));
}

test('SIGSTOP: creates refused while Redis was frozen are admitted at once with the same requestId', async () => {
  const { redis, harness } = await startFailClosed();
  await refusedThenRetried(
    harness,
    async () => {
      redis.freeze();
    },
    async () => {
      redis.thaw();
    },
  );
});

test('DEBUG SLEEP: creates refused while Redis slept are admitted at once with the same requestId', async () => {
  const { redis, harness } = await startFailClosed();
  let sleeping: Promise<unknown> = Promise.resolve();
  await refusedThenRetried(
    harness,
    async () => {
      // Long enough that all the creates are refused while it lasts, on a busy machine too.
      sleeping = redis.client().call('DEBUG', 'SLEEP', '3');
      // The sleep has begun once Redis leaves another client's PING unanswered for a while.
      const probe = redis.client();
      await waitFor('Redis to sleep', () =>
        Promise.race([
          probe.ping().then(() => false),
          new Promise<boolean>((resolve) => setTimeout(resolve, 50, true)),
        ]),
      );
    },
    async () => {
      await sleeping;
    },
  );
});

// The per-address guard on failed authentication (docs/security.md#in-authentication): past too many wrong keys from one
// address, its wrong keys get 429 with Retry-After until the window ends; valid keys still pass, so one
// bad client behind a shared address cannot lock the other tenants out.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';

const ALLOWED_FAILURES = 3;
let harness: GatewayHarness;
beforeAll(async () => {
  harness = await startGatewayHarness({
    authFailureLimit: ALLOWED_FAILURES,
    alphaLimitsYaml: '[{ id: requests, routes: ["*"], cost: requests, limit: 100, windowSeconds: 60 }]',
  });
});
afterAll(async () => {
  await harness.close();
});

function keysWith(authorization: string | undefined) {
  return fetch(`${harness.url}/v1/account/keys`, {
    headers: authorization === undefined ? {} : { authorization },
  });
}

test('missing keys are not counted as guesses', async () => {
  for (let i = 0; i < ALLOWED_FAILURES + 2; i++) expect((await keysWith(undefined)).status).toBe(401);
  expect((await keysWith(`Bearer ${harness.keys.alpha}`)).status).toBe(200);
});

test('wrong keys are counted; past the limit they get 429, valid keys still pass', async () => {
  const wrongKey = `Bearer ggk_${'Z'.repeat(40)}`;
  for (let i = 0; i < ALLOWED_FAILURES; i++) expect((await keysWith(wrongKey)).status).toBe(401);

  const refused = await keysWith(wrongKey);
  expect(refused.status).toBe(429);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(await refused.json()).toEqual({
    status: 429,
    error: {
      code: 'too_many_authentication_failures',
      type: 'rate_limit_error',
      message: `too many failed authentications from this address; retry in ${retryAfter} s`,
    },
  });
  // The tenant's own rate-limit headers belong to authenticated requests only.
  expect(refused.headers.get('x-ratelimit-limit')).toBeNull();

  const valid = await keysWith(`Bearer ${harness.keys.alpha}`);
  expect(valid.status).toBe(200);
  expect(valid.headers.get('x-ratelimit-limit')).toBe('100');
  expect(harness.simulator.received).toEqual([]);
});

// docs/ownership.md#creates after the IETF Idempotency-Key draft: a requestId names one submission. Its owner
// repeating it with the same body on the same route gets the replay; with another body (compared parsed,
// before the policy, numbers by exact value) or on another route, 422 idempotency_key_reused, and nothing
// is forwarded or charged. With the memory store and with Redis, whose record keeps the fingerprint.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  useGatewayHarness,
  useGatewayOnRedisPerTest,
  type GatewayHarness,
} from '../support/gateway-harness.ts';
import { receivedCreates, submission } from './ownership-client.ts';

// 10 requests per 60 s: each one takes 6 s of room. Samples above 2 are clamped.
const LIMITS = "[{ id: requests, routes: ['*'], cost: requests, limit: 10, windowSeconds: 60 }]";
const POLICY = '{ samples: { maximum: 2, onViolation: clamp } }';
const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';

async function post(harness: GatewayHarness, path: string, text: string) {
  const response = await fetch(`${harness.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body: text,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

function reused(requestId: string) {
  return {
    status: 422,
    error: {
      code: 'idempotency_key_reused',
      type: 'conflict_error',
      message:
        `requestId ${requestId} was already used with another body or on another route; ` +
        'submit with another requestId',
      param: 'requestId',
    },
  };
}

/**
 * The units a RateLimit header says are left (`r=`). Its `t=` counts down between two answers, so a
 * comparison of whole headers would fail whenever a second boundary passes between them.
 */
function unitsLeft(headers: Headers | undefined): string | undefined {
  return /;r=(\d+);/.exec(headers?.get('ratelimit') ?? '')?.[1];
}

/** The first create, then each repeat: the answers, and what the upstream and the limit saw. */
async function firstThen(harness: GatewayHarness, first: [string, string], ...repeats: [string, string][]) {
  const original = await post(harness, ...first);
  expect(original.status).toBe(200);
  const answers = [];
  for (const repeat of repeats) answers.push(await post(harness, ...repeat));
  return { original, answers };
}

describe('the memory store', () => {
  const harness = useGatewayHarness({ alphaLimitsYaml: LIMITS, alphaPolicyYaml: POLICY });

  test('the same body, spaced, ordered, escaped and numbered otherwise: replayed', async () => {
    const requestId = randomUUID();
    const { original, answers } = await firstThen(
      harness,
      [
        IMAGES,
        `{"requestId":"${requestId}","samples":2,"CFGScale":5,"input":{"positivePrompt":"fox","x":[1,2]}}`,
      ],
      [
        IMAGES,
        `{ "input" : { "x" : [ 1.0 , 2e0 ], "positivePrompt" : "f\\u006fx" }, "CFGScale" : 0.5E1, "samples" : 2 , "requestId" : "${requestId.toUpperCase()}" }`,
      ],
    );
    expect(answers[0]?.status).toBe(200);
    expect(answers[0]?.body).toEqual(original.body);
    expect(answers[0]?.headers.get('idempotent-replayed')).toBe('true');
    expect(receivedCreates(harness)).toHaveLength(1);
  });

  test('the same body the policy rewrites: replayed, the rewrite is not a difference', async () => {
    const requestId = randomUUID();
    const body = `{"requestId":"${requestId}","samples":4}`;
    const { answers } = await firstThen(harness, [IMAGES, body], [IMAGES, body]);
    expect(answers[0]?.headers.get('idempotent-replayed')).toBe('true');
    expect(receivedCreates(harness)).toHaveLength(1);
  });

  test.each([
    ['another prompt', '{"input":{"positivePrompt":"fox"}}', '{"input":{"positivePrompt":"wolf"}}'],
    ['other samples', '{"samples":1}', '{"samples":2}'],
    ['a member added', '{"samples":1}', '{"samples":1,"seed":3}'],
    // A double cannot tell these two apart; their exact values differ.
    ['a seed one apart beyond 2^53', '{"seed":9223372036854775807}', '{"seed":9223372036854775806}'],
    // Both clamped to 2 by the policy: the client's bodies differ all the same.
    ['bodies the policy makes equal', '{"samples":4}', '{"samples":2}'],
  ])('%s: 422 idempotency_key_reused, nothing forwarded or charged', async (_name, first, second) => {
    const requestId = randomUUID();
    const withId = (text: string) => text.replace('{', `{"requestId":"${requestId}",`);
    const { original, answers } = await firstThen(harness, [IMAGES, withId(first)], [IMAGES, withId(second)]);
    expect({ status: answers[0]?.status, body: answers[0]?.body }).toEqual({
      status: 422,
      body: reused(requestId),
    });
    expect(receivedCreates(harness)).toHaveLength(1);
    // Not charged: the limit shows the room the first create left.
    expect(unitsLeft(original.headers)).toBeDefined();
    expect(unitsLeft(answers[0]?.headers)).toBe(unitsLeft(original.headers));
    // And the original is still there to replay.
    const again = await post(harness, IMAGES, withId(first));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  test('on another route: 422, not forwarded', async () => {
    const requestId = randomUUID();
    const { answers } = await firstThen(
      harness,
      [IMAGES, `{"requestId":"${requestId}"}`],
      [VIDEOS, `{"requestId":"${requestId}","duration":5}`],
    );
    expect({ status: answers[0]?.status, body: answers[0]?.body }).toEqual({
      status: 422,
      body: reused(requestId),
    });
    expect(receivedCreates(harness)).toEqual([{ url: IMAGES, body: `{"requestId":"${requestId}"}` }]);
  });
});

describe('Redis', () => {
  const startOnRedis = useGatewayOnRedisPerTest();

  test('the record keeps the fingerprint: the same body replayed, another refused', async () => {
    const { harness } = await startOnRedis({
      alphaLimitsYaml: LIMITS,
      storeYaml: (url) => `{ kind: redis, redis: { url: "${url}", commandTimeoutMs: 2000 } }`,
    });
    const requestId = randomUUID();
    const { original, answers } = await firstThen(
      harness,
      [IMAGES, `{"requestId":"${requestId}","samples":1,"seed":1}`],
      [IMAGES, `{"seed":1.0,"samples":1,"requestId":"${requestId}"}`],
      [IMAGES, `{"requestId":"${requestId}","samples":1,"seed":2}`],
    );
    expect(answers.map(({ status, body }) => ({ status, body }))).toEqual([
      { status: 200, body: submission(requestId) },
      { status: 422, body: reused(requestId) },
    ]);
    expect(original.body).toEqual(submission(requestId));
    expect(answers[0]?.headers.get('idempotent-replayed')).toBe('true');
    expect(receivedCreates(harness)).toHaveLength(1);
  });
});

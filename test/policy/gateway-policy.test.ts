// Tenant policy (docs/policy.md) through HTTP: the simulator's record is the witness of what a policy forwards.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';

const ENFORCED = `{ safetyLevel: { minimum: high, onViolation: raise }, samples: { maximum: 4, onViolation: clamp },
  steps: { maximum: 30, onViolation: clamp }, scanResults: { require: true }, models: { deny: ["vendor@beta-*"] },
  video: { enabled: true, maxDurationSeconds: 10 } }`;
const REJECTING = '{ samples: { maximum: 4, onViolation: reject }, outputTypes: [url] }';
const SHADOW = `{ mode: shadow, safetyLevel: { minimum: high, onViolation: raise }, samples: { maximum: 4, onViolation: reject } }`;
const NO_VIDEO = '{ video: { enabled: false } }';

async function post(harness: GatewayHarness, path: string, body: string) {
  const response = await fetch(`${harness.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

function forwardedBody(harness: GatewayHarness): string {
  expect(harness.simulator.received).toHaveLength(1);
  return harness.simulator.received[0]!.body.toString('utf8');
}

async function policyCount(
  harness: GatewayHarness,
  rule: string,
  action: string,
): Promise<number | undefined> {
  const metric = await harness.metrics.policyActions.get();
  return metric.values.find((value) => value.labels.rule === rule && value.labels.action === action)?.value;
}

describe('enforce mode: raise, clamp and set rewrite what is forwarded', () => {
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startGatewayHarness({ alphaPolicyYaml: ENFORCED.replace(/\n/g, ' ') });
  });
  afterAll(async () => {
    await harness.close();
  });
  beforeEach(() => {
    harness.simulator.clearReceived();
  });

  test('a request that breaks four rules: every change applied, listed, and the 19-digit seed intact', async () => {
    const ID = randomUUID();
    const response = await post(
      harness,
      '/v1/images/generations',
      `{"seed":9223372036854775807,"safetyLevel":"low","samples":8,"steps":50,"input":{"positivePrompt":"a cat"},"requestId":"${ID}"}`,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('gengate-policy')).toBe(
      'safetyLevel=raised;from=low;to=high, samples=clamped;from=8;to=4, steps=clamped;from=50;to=30, scanResults=set;to=true',
    );
    expect(forwardedBody(harness)).toBe(
      `{"seed":9223372036854775807,"safetyLevel":"high","samples":4,"steps":30,"input":{"positivePrompt":"a cat"},"requestId":"${ID}","scanResults":true}`,
    );
    expect(await policyCount(harness, 'samples', 'clamped')).toBe(1);
  });

  test('an omitted safetyLevel counts as medium and is raised explicitly', async () => {
    const response = await post(harness, '/v1/images/generations', '{"scanResults":true}');
    expect(response.headers.get('gengate-policy')).toBe('safetyLevel=raised;to=high');
    expect(JSON.parse(forwardedBody(harness))).toEqual({
      scanResults: true,
      safetyLevel: 'high',
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
    });
  });

  test('a compliant request is forwarded byte for byte, without the header', async () => {
    const body = `{ "safetyLevel" : "high", "scanResults": true, "samples": 2, "requestId": "${randomUUID()}" }`;
    const response = await post(harness, '/v1/images/generations', body);
    expect(response.headers.get('gengate-policy')).toBeNull();
    expect(forwardedBody(harness)).toBe(body);
  });

  test('a denied model and an over-long video are refused with 403 policy_violation', async () => {
    const model = await post(harness, '/v1/images/generations', '{"model":"vendor@beta-2"}');
    expect(model.body).toEqual({
      status: 403,
      error: {
        code: 'policy_violation',
        type: 'permission_error',
        message: 'model must not match vendor@beta-* for this tenant',
        param: 'model',
      },
    });
    const video = await post(harness, '/v1/videos/generations', '{"duration":12}');
    expect(video.body).toEqual({
      status: 403,
      error: {
        code: 'policy_violation',
        type: 'permission_error',
        message: 'duration must be at most 10 for this tenant',
        param: 'duration',
      },
    });
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('enforce mode: reject', () => {
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startGatewayHarness({
      alphaPolicyYaml: REJECTING,
      alphaLimitsYaml:
        '[{ id: images, routes: [images.create], cost: samples, limit: 100, windowSeconds: 60 }]',
    });
  });
  afterAll(async () => {
    await harness.close();
  });

  test('a rejected request reaches nothing and is charged nothing', async () => {
    const samples = await post(harness, '/v1/images/generations', '{"samples":5}');
    expect(samples.body).toEqual({
      status: 403,
      error: {
        code: 'policy_violation',
        type: 'permission_error',
        message: 'samples must be at most 4 for this tenant',
        param: 'samples',
      },
    });
    const outputType = await post(harness, '/v1/images/generations', '{"outputType":"base64"}');
    expect(outputType.status).toBe(403);
    expect(harness.simulator.received).toEqual([]);
    const admitted = await post(harness, '/v1/images/generations', '{"samples":4}');
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('ratelimit')).toBe('"images";r=96;t=3');
    expect(await policyCount(harness, 'samples', 'rejected')).toBe(1);
  });
});

describe('shadow mode', () => {
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startGatewayHarness({ alphaPolicyYaml: SHADOW });
  });
  afterAll(async () => {
    await harness.close();
  });

  // Regression: policyShadowed listed every rule broken, not what enforce mode would have done.
  test('forwards untouched, counts and logs what enforce mode would have done, and logs every other rule broken', async () => {
    const body = `{"safetyLevel":"low","samples":9,"requestId":"${randomUUID()}"}`;
    const response = await post(harness, '/v1/images/generations', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('gengate-policy')).toBeNull();
    expect(forwardedBody(harness)).toBe(body);
    const logLine = harness.logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.route === 'images.create');
    expect(logLine).toMatchObject({
      policyShadowed: 'samples=rejected',
      policyShadowedOther: 'safetyLevel=raised',
    });
    harness.simulator.clearReceived();
    // Within the samples maximum: enforce mode would have raised the level and forwarded it.
    const raisedOnly = `{"safetyLevel":"low","samples":2,"requestId":"${randomUUID()}"}`;
    expect((await post(harness, '/v1/images/generations', raisedOnly)).status).toBe(200);
    expect(forwardedBody(harness)).toBe(raisedOnly);
    // Enforce mode rejects at samples and then raises nothing: the first request counts as rejected only.
    const { values } = await harness.metrics.policyActions.get();
    expect(values.filter((value) => value.labels.tenant === 'alpha')).toEqual([
      { labels: { tenant: 'alpha', rule: 'safetyLevel', action: 'raised', mode: 'shadow' }, value: 1 },
      { labels: { tenant: 'alpha', rule: 'safetyLevel', action: 'set', mode: 'shadow' }, value: 0 },
      { labels: { tenant: 'alpha', rule: 'samples', action: 'rejected', mode: 'shadow' }, value: 1 },
    ]);
  });
});

test('video disabled for a tenant', async () => {
  const harness = await startGatewayHarness({ alphaPolicyYaml: NO_VIDEO });
  try {
    const response = await post(harness, '/v1/videos/generations', '{"duration":5}');
    expect(response.body).toEqual({
      status: 403,
      error: {
        code: 'policy_violation',
        type: 'permission_error',
        message: 'video generation is not enabled for this tenant',
      },
    });
    expect(harness.simulator.received).toEqual([]);
  } finally {
    await harness.close();
  }
});

// docs/policy.md#the-rules rule by rule through HTTP, in each mode: what the upstream received (the
// simulator's record) or the exact 403. A rejected request never reaches the upstream; shadow mode
// forwards the body untouched whatever the rule would have done.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { startGatewayHarness } from '../support/gateway-harness.ts';

interface RuleCase {
  name: string;
  policy: string;
  path?: string;
  body: Record<string, unknown>;
  /** The members the forwarded body must have (beyond what was sent), or the 403 expected. */
  expect: { forwarded: Record<string, unknown> } | { rejected: { message: string; param?: string } };
}

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';

const ENFORCE_CASES: RuleCase[] = [
  {
    name: 'models: a model outside the allow list is rejected',
    policy: '{ models: { allow: ["vendor@*"] } }',
    body: { model: 'other@fast' },
    expect: { rejected: { message: 'model must match one of vendor@* for this tenant', param: 'model' } },
  },
  {
    name: 'models: a model inside the allow list passes',
    policy: '{ models: { allow: ["vendor@*"] } }',
    body: { model: 'vendor@fast' },
    expect: { forwarded: { model: 'vendor@fast' } },
  },
  {
    name: 'models: no model, when the service default is not allowed',
    policy: '{ models: { allow: ["vendor@*"], allowServiceDefault: false } }',
    body: {},
    expect: {
      rejected: {
        message: "model is required for this tenant: the service's default model is not allowed",
        param: 'model',
      },
    },
  },
  {
    name: 'models: a denied model on a video',
    policy: '{ models: { deny: ["vendor@*"] } }',
    path: VIDEOS,
    body: { duration: 5, model: 'vendor@seedance' },
    expect: { rejected: { message: 'model must not match vendor@* for this tenant', param: 'model' } },
  },
  {
    name: 'safetyLevel: reject below the minimum',
    policy: '{ safetyLevel: { minimum: high, onViolation: reject } }',
    body: { safetyLevel: 'low' },
    expect: {
      rejected: { message: 'safetyLevel must be at least high for this tenant', param: 'safetyLevel' },
    },
  },
  {
    name: 'safetyLevel: an omitted level meeting the minimum is made explicit',
    policy: '{ safetyLevel: { minimum: medium, onViolation: reject } }',
    body: {},
    expect: { forwarded: { safetyLevel: 'medium' } },
  },
  {
    name: 'steps: reject above the maximum',
    policy: '{ steps: { maximum: 30, onViolation: reject } }',
    body: { steps: 40 },
    expect: { rejected: { message: 'steps must be at most 30 for this tenant', param: 'steps' } },
  },
  {
    name: 'steps: clamp above the maximum',
    policy: '{ steps: { maximum: 30, onViolation: clamp } }',
    body: { steps: 40 },
    expect: { forwarded: { steps: 30 } },
  },
  {
    name: 'samples: clamp above the maximum',
    policy: '{ samples: { maximum: 2, onViolation: clamp } }',
    body: { samples: 5 },
    expect: { forwarded: { samples: 2 } },
  },
  {
    name: 'scanResults: forwarded as true whatever was sent',
    policy: '{ scanResults: { require: true } }',
    body: { scanResults: false },
    expect: { forwarded: { scanResults: true } },
  },
  {
    name: 'outputTypes: a type outside the list is rejected',
    policy: '{ outputTypes: [url, dataURI] }',
    body: { outputType: 'base64' },
    expect: {
      rejected: { message: 'outputType must be one of url, dataURI for this tenant', param: 'outputType' },
    },
  },
  {
    name: 'video: a duration within the maximum passes',
    policy: '{ video: { maxDurationSeconds: 10 } }',
    path: VIDEOS,
    body: { duration: 10 },
    expect: { forwarded: { duration: 10 } },
  },
];

// The same rules in shadow mode: every one of them would act, none does.
const SHADOW_CASES: RuleCase[] = ENFORCE_CASES.filter((ruleCase) => 'rejected' in ruleCase.expect).map(
  (ruleCase) => ({
    ...ruleCase,
    name: `shadow, ${ruleCase.name}`,
    policy: ruleCase.policy.replace('{ ', '{ mode: shadow, '),
    expect: { forwarded: {} },
  }),
);

async function run(ruleCase: RuleCase) {
  const harness = await startGatewayHarness({ alphaPolicyYaml: ruleCase.policy });
  try {
    const sent = JSON.stringify({ ...ruleCase.body, requestId: randomUUID() });
    const response = await fetch(`${harness.url}${ruleCase.path ?? IMAGES}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
      body: sent,
    });
    const answer = await response.json();
    if ('rejected' in ruleCase.expect) {
      const { message, param } = ruleCase.expect.rejected;
      expect(response.status).toBe(403);
      expect(answer).toEqual({
        status: 403,
        error: {
          code: 'policy_violation',
          type: 'permission_error',
          message,
          ...(param === undefined ? {} : { param }),
        },
      });
      expect(harness.simulator.received).toEqual([]);
      return;
    }
    expect(response.status).toBe(200);
    expect(harness.simulator.received).toHaveLength(1);
    const forwarded = harness.simulator.received[0]!.body.toString('utf8');
    if (Object.keys(ruleCase.expect.forwarded).length === 0) {
      expect(forwarded).toBe(sent);
    } else {
      expect(JSON.parse(forwarded)).toEqual({ ...JSON.parse(sent), ...ruleCase.expect.forwarded });
    }
  } finally {
    await harness.close();
  }
}

describe('enforce mode', () => {
  test.each(ENFORCE_CASES.map((ruleCase) => [ruleCase.name, ruleCase] as const))(
    '%s',
    async (_name, ruleCase) => {
      await run(ruleCase);
    },
  );
});

describe('shadow mode', () => {
  test.each(SHADOW_CASES.map((ruleCase) => [ruleCase.name, ruleCase] as const))(
    '%s',
    async (_name, ruleCase) => {
      await run(ruleCase);
    },
  );
});

import { describe, expect, it } from 'vitest';
import { parseJsonLossless, stringifyJson } from '../../src/simulator/lossless-json.ts';
import { applyPolicy } from '../../src/policy/apply-policy.ts';
import type { PolicyOutcome } from '../../src/policy/outcome.ts';
import { loadPolicy } from './policy-fixtures.ts';

const body = (json: string) => parseJsonLossless(json) as Record<string, unknown>;

function unchanged(request: Record<string, unknown>): PolicyOutcome {
  return { body: request, changes: [], shadowed: [] };
}

describe('applyPolicy: safetyLevel', () => {
  it('raises a level below the minimum, and leaves the other members as they were', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: high, onViolation: raise } }');
    const request = body('{"safetyLevel":"low","samples":2,"input":{"positivePrompt":"a cat"}}');
    const outcome = applyPolicy(policy, 'images.create', request);
    expect(outcome).toEqual({
      body: { safetyLevel: 'high', samples: 2, input: { positivePrompt: 'a cat' } },
      changes: [{ rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low', to: 'high' }],
      shadowed: [],
    });
    expect(request.safetyLevel).toBe('low');
  });

  it('rejects a level below the minimum naming the bound', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: medium, onViolation: reject } }');
    const request = body('{"safetyLevel":"low"}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual({
      body: request,
      changes: [],
      rejection: {
        rule: 'safetyLevel',
        action: 'rejected',
        param: 'safetyLevel',
        message: 'safetyLevel must be at least medium for this tenant',
      },
      shadowed: [],
    });
  });

  it('counts an omitted or null level as medium: raised to a higher minimum', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: high } }');
    for (const request of [body('{}'), body('{"safetyLevel":null}')]) {
      expect(applyPolicy(policy, 'images.create', request)).toEqual({
        body: { safetyLevel: 'high' },
        changes: [
          { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: undefined, to: 'high' },
        ],
        shadowed: [],
      });
    }
  });

  it('rejects an omitted level under a high minimum, saying the service default is medium', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: high, onViolation: reject } }');
    expect(applyPolicy(policy, 'images.create', body('{}')).rejection).toEqual({
      rule: 'safetyLevel',
      action: 'rejected',
      param: 'safetyLevel',
      message: 'safetyLevel must be at least high for this tenant (the service default is medium)',
    });
  });

  it('makes an omitted level explicit when the default meets the minimum', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: low, onViolation: reject } }');
    expect(applyPolicy(policy, 'images.create', body('{"safetyLevel":null,"steps":10}'))).toEqual({
      body: { safetyLevel: 'medium', steps: 10 },
      changes: [{ rule: 'safetyLevel', field: 'safetyLevel', action: 'set', from: undefined, to: 'medium' }],
      shadowed: [],
    });
  });

  it('leaves an explicit level at or above the minimum alone', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: medium } }');
    for (const level of ['medium', 'high']) {
      const request = body(`{"safetyLevel":"${level}"}`);
      expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
    }
  });

  it('does not act on videos, which the service always runs at high', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: high, onViolation: reject } }');
    const request = body('{"duration":5,"safetyLevel":"low"}');
    expect(applyPolicy(policy, 'videos.create', request)).toEqual(unchanged(request));
  });
});

describe('applyPolicy: samples and steps', () => {
  it('clamps samples above the maximum', async () => {
    const policy = await loadPolicy('{ samples: { maximum: 4 } }');
    expect(applyPolicy(policy, 'images.create', body('{"samples":8}'))).toEqual({
      body: { samples: 4 },
      changes: [{ rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 }],
      shadowed: [],
    });
  });

  it('rejects samples above the maximum naming the bound', async () => {
    const policy = await loadPolicy('{ samples: { maximum: 4, onViolation: reject } }');
    expect(applyPolicy(policy, 'images.create', body('{"samples":5}')).rejection).toEqual({
      rule: 'samples',
      action: 'rejected',
      param: 'samples',
      message: 'samples must be at most 4 for this tenant',
    });
  });

  it('accepts samples at the maximum and omitted samples (the default is 1)', async () => {
    const policy = await loadPolicy('{ samples: { maximum: 1, onViolation: reject } }');
    for (const request of [body('{"samples":1}'), body('{}'), body('{"samples":null}')]) {
      expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
    }
  });

  it('clamps steps above the maximum, and an omitted steps whose default (25) is above it', async () => {
    const policy = await loadPolicy('{ steps: { maximum: 20, onViolation: clamp } }');
    expect(applyPolicy(policy, 'images.create', body('{"steps":50}')).changes).toEqual([
      { rule: 'steps', field: 'steps', action: 'clamped', from: 50, to: 20 },
    ]);
    expect(applyPolicy(policy, 'images.create', body('{}'))).toEqual({
      body: { steps: 20 },
      changes: [{ rule: 'steps', field: 'steps', action: 'clamped', from: undefined, to: 20 }],
      shadowed: [],
    });
  });

  it('rejects steps above the maximum, explaining the default when steps was omitted', async () => {
    const policy = await loadPolicy('{ steps: { maximum: 20, onViolation: reject } }');
    expect(applyPolicy(policy, 'images.create', body('{"steps":21}')).rejection?.message).toBe(
      'steps must be at most 20 for this tenant',
    );
    expect(applyPolicy(policy, 'images.create', body('{}')).rejection).toEqual({
      rule: 'steps',
      action: 'rejected',
      param: 'steps',
      message: 'steps must be at most 20 for this tenant (the service default is 25)',
    });
  });

  it('leaves steps at or under the maximum alone', async () => {
    const policy = await loadPolicy('{ steps: { maximum: 30 } }');
    for (const request of [body('{"steps":30}'), body('{}')]) {
      expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
    }
  });
});

describe('applyPolicy: scanResults and outputTypes', () => {
  it('forwards scanResults: true whatever was sent when required', async () => {
    const policy = await loadPolicy('{ scanResults: { require: true } }');
    expect(applyPolicy(policy, 'images.create', body('{"scanResults":false}')).changes).toEqual([
      { rule: 'scanResults', field: 'scanResults', action: 'set', from: false, to: true },
    ]);
    expect(applyPolicy(policy, 'images.create', body('{}'))).toEqual({
      body: { scanResults: true },
      changes: [{ rule: 'scanResults', field: 'scanResults', action: 'set', from: undefined, to: true }],
      shadowed: [],
    });
    const compliant = body('{"scanResults":true}');
    expect(applyPolicy(policy, 'images.create', compliant)).toEqual(unchanged(compliant));
  });

  it('has no rule when scanResults.require is false', async () => {
    const policy = await loadPolicy('{ scanResults: { require: false } }');
    const request = body('{"scanResults":false}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
  });

  it('rejects an outputType outside the list, and an omitted one when url is not listed', async () => {
    const policy = await loadPolicy('{ outputTypes: [base64, dataURI] }');
    expect(applyPolicy(policy, 'images.create', body('{"outputType":"url"}')).rejection).toEqual({
      rule: 'outputTypes',
      action: 'rejected',
      param: 'outputType',
      message: 'outputType must be one of base64, dataURI for this tenant',
    });
    expect(applyPolicy(policy, 'images.create', body('{"outputType":null}')).rejection?.message).toBe(
      'outputType must be one of base64, dataURI for this tenant (the service default is url)',
    );
    const allowed = body('{"outputType":"dataURI"}');
    expect(applyPolicy(policy, 'images.create', allowed)).toEqual(unchanged(allowed));
  });

  it('accepts an omitted outputType when url is listed', async () => {
    const policy = await loadPolicy('{ outputTypes: [url] }');
    const request = body('{}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
  });

  it('applies none of the image-only rules to videos', async () => {
    const policy = await loadPolicy(
      '{ samples: { maximum: 1 }, steps: { maximum: 1 }, scanResults: { require: true }, outputTypes: [base64] }',
    );
    const request = body('{"duration":5}');
    expect(applyPolicy(policy, 'videos.create', request)).toEqual(unchanged(request));
  });
});

describe('applyPolicy: models', () => {
  it('rejects a model matching a deny glob, even when the allow list matches it too', async () => {
    const policy = await loadPolicy('{ models: { allow: ["vendor@*"], deny: ["vendor@beta-*"] } }');
    expect(applyPolicy(policy, 'images.create', body('{"model":"vendor@beta-2"}')).rejection).toEqual({
      rule: 'models',
      action: 'rejected',
      param: 'model',
      message: 'model must not match vendor@beta-* for this tenant',
    });
    const allowed = body('{"model":"vendor@stable-1"}');
    expect(applyPolicy(policy, 'images.create', allowed)).toEqual(unchanged(allowed));
  });

  it('rejects a model outside the allow list, listing it', async () => {
    const policy = await loadPolicy('{ models: { allow: ["vendor@*", "other@exact"] } }');
    expect(applyPolicy(policy, 'images.create', body('{"model":"other@exact2"}')).rejection).toEqual({
      rule: 'models',
      action: 'rejected',
      param: 'model',
      message: 'model must match one of vendor@*, other@exact for this tenant',
    });
    const exact = body('{"model":"other@exact"}');
    expect(applyPolicy(policy, 'images.create', exact)).toEqual(unchanged(exact));
  });

  it('lets a request without model through an allow list only when allowServiceDefault (the default)', async () => {
    const lenient = await loadPolicy('{ models: { allow: ["vendor@*"] } }');
    const request = body('{"model":null}');
    expect(applyPolicy(lenient, 'images.create', request)).toEqual(unchanged(request));

    const strict = await loadPolicy('{ models: { allow: ["vendor@*"], allowServiceDefault: false } }');
    expect(applyPolicy(strict, 'images.create', body('{}')).rejection).toEqual({
      rule: 'models',
      action: 'rejected',
      param: 'model',
      message: "model is required for this tenant: the service's default model is not allowed",
    });
  });

  it('never matches deny globs against the unnamed service default', async () => {
    const policy = await loadPolicy('{ models: { deny: ["*"] } }');
    const request = body('{}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
    expect(applyPolicy(policy, 'images.create', body('{"model":"a@b"}')).rejection?.message).toBe(
      'model must not match * for this tenant',
    );
  });

  it('allows no named model with an empty allow list', async () => {
    const policy = await loadPolicy('{ models: { allow: [] } }');
    expect(applyPolicy(policy, 'images.create', body('{"model":"a@b"}')).rejection?.message).toBe(
      'no model may be named for this tenant',
    );
  });

  it('applies to videos too', async () => {
    const policy = await loadPolicy('{ models: { allow: ["bytedance@*"] } }');
    expect(
      applyPolicy(policy, 'videos.create', body('{"duration":5,"model":"vendor@x"}')).rejection?.param,
    ).toBe('model');
  });
});

describe('applyPolicy: video', () => {
  it('rejects every video when video is disabled, and leaves images alone', async () => {
    const policy = await loadPolicy('{ video: { enabled: false } }');
    expect(applyPolicy(policy, 'videos.create', body('{"duration":2}')).rejection).toEqual({
      rule: 'video',
      action: 'rejected',
      param: undefined,
      message: 'video generation is not enabled for this tenant',
    });
    const image = body('{}');
    expect(applyPolicy(policy, 'images.create', image)).toEqual(unchanged(image));
  });

  it('rejects a duration above maxDurationSeconds, bigint durations included; never clamps', async () => {
    const policy = await loadPolicy('{ video: { maxDurationSeconds: 10 } }');
    const rejection = {
      rule: 'video',
      action: 'rejected',
      param: 'duration',
      message: 'duration must be at most 10 for this tenant',
    };
    expect(applyPolicy(policy, 'videos.create', body('{"duration":11}')).rejection).toEqual(rejection);
    expect(applyPolicy(policy, 'videos.create', body('{"duration":99999999999999999999}')).rejection).toEqual(
      rejection,
    );
    const atBound = body('{"duration":10}');
    expect(applyPolicy(policy, 'videos.create', atBound)).toEqual(unchanged(atBound));
  });
});

describe('applyPolicy: the forwarded body', () => {
  it('returns the very object received when nothing changes', async () => {
    const policy = await loadPolicy(
      '{ safetyLevel: { minimum: medium }, samples: { maximum: 4 }, models: { allow: ["*"] } }',
    );
    const request = body('{"safetyLevel":"high","samples":4,"model":"a@b"}');
    expect(applyPolicy(policy, 'images.create', request).body).toBe(request);
  });

  it('keeps a 19-digit seed and every other member, in order, through a rewrite', async () => {
    const policy = await loadPolicy('{ samples: { maximum: 4 }, safetyLevel: { minimum: high } }');
    const text =
      '{"seed":9223372036854775807,"samples":8,"input":{"positivePrompt":"a cat"},"CFGScale":7.5,"safetyLevel":"low"}';
    const outcome = applyPolicy(policy, 'images.create', body(text));
    expect(stringifyJson(outcome.body)).toBe(
      '{"seed":9223372036854775807,"samples":4,"input":{"positivePrompt":"a cat"},"CFGScale":7.5,"safetyLevel":"high"}',
    );
  });

  it('appends members it makes explicit after the ones sent', async () => {
    const policy = await loadPolicy('{ safetyLevel: { minimum: low }, scanResults: { require: true } }');
    const outcome = applyPolicy(policy, 'images.create', body('{"seed":12345678901234567890}'));
    expect(stringifyJson(outcome.body)).toBe(
      '{"seed":12345678901234567890,"safetyLevel":"medium","scanResults":true}',
    );
  });
});

describe('applyPolicy: several rules', () => {
  it('applies and lists every change of a request that breaks three rules, in rule order', async () => {
    const policy = await loadPolicy(
      '{ steps: { maximum: 30 }, samples: { maximum: 4 }, safetyLevel: { minimum: high }, scanResults: { require: true } }',
    );
    const outcome = applyPolicy(
      policy,
      'images.create',
      body('{"scanResults":false,"steps":40,"samples":8,"safetyLevel":"low"}'),
    );
    expect(outcome).toEqual({
      body: { scanResults: true, steps: 30, samples: 4, safetyLevel: 'high' },
      changes: [
        { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low', to: 'high' },
        { rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 },
        { rule: 'steps', field: 'steps', action: 'clamped', from: 40, to: 30 },
        { rule: 'scanResults', field: 'scanResults', action: 'set', from: false, to: true },
      ],
      shadowed: [],
    });
  });

  it('refuses at the first rejecting rule in rule order and then changes nothing', async () => {
    const policy = await loadPolicy(
      '{ outputTypes: [url], samples: { maximum: 4, onViolation: reject }, safetyLevel: { minimum: high }, models: { deny: ["bad@*"] } }',
    );
    const request = body('{"outputType":"base64","samples":8,"safetyLevel":"low","model":"bad@one"}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual({
      body: request,
      changes: [],
      rejection: {
        rule: 'models',
        action: 'rejected',
        param: 'model',
        message: 'model must not match bad@* for this tenant',
      },
      shadowed: [],
    });
    const withoutModel = body('{"outputType":"base64","samples":8,"safetyLevel":"low"}');
    expect(applyPolicy(policy, 'images.create', withoutModel).rejection?.rule).toBe('samples');
  });

  it('judges models before video, as the contract orders them', async () => {
    const policy = await loadPolicy('{ video: { enabled: false }, models: { allow: ["a@*"] } }');
    expect(applyPolicy(policy, 'videos.create', body('{"duration":5,"model":"b@c"}')).rejection?.rule).toBe(
      'models',
    );
    expect(applyPolicy(policy, 'videos.create', body('{"duration":5,"model":"a@c"}')).rejection?.rule).toBe(
      'video',
    );
  });

  it('has no rule at all for an empty policy', async () => {
    const policy = await loadPolicy('{}');
    const request = body('{"safetyLevel":"low","samples":20,"steps":50,"model":"any@model"}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
  });
});

describe('applyPolicy: shadow mode', () => {
  it('forwards the body untouched and reports every decision enforce mode would make', async () => {
    const policy = await loadPolicy(
      '{ mode: shadow, safetyLevel: { minimum: high }, samples: { maximum: 4 }, steps: { maximum: 20, onViolation: reject }, outputTypes: [url], scanResults: { require: true } }',
    );
    const request = body(
      '{"safetyLevel":"low","samples":8,"steps":30,"outputType":"base64","seed":9223372036854775807}',
    );
    const outcome = applyPolicy(policy, 'images.create', request);
    expect(outcome).toEqual({
      body: request,
      changes: [],
      shadowed: [
        { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low', to: 'high' },
        { rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 },
        {
          rule: 'steps',
          action: 'rejected',
          param: 'steps',
          message: 'steps must be at most 20 for this tenant',
        },
        { rule: 'scanResults', field: 'scanResults', action: 'set', from: undefined, to: true },
        {
          rule: 'outputTypes',
          action: 'rejected',
          param: 'outputType',
          message: 'outputType must be one of url for this tenant',
        },
      ],
    });
    expect(outcome.body).toBe(request);
  });

  it('does not reject in shadow mode: models and video included', async () => {
    const policy = await loadPolicy(
      '{ mode: shadow, models: { allow: ["a@*"] }, video: { enabled: false } }',
    );
    const request = body('{"duration":5,"model":"b@c"}');
    expect(applyPolicy(policy, 'videos.create', request)).toEqual({
      body: request,
      changes: [],
      shadowed: [
        {
          rule: 'models',
          action: 'rejected',
          param: 'model',
          message: 'model must match one of a@* for this tenant',
        },
        {
          rule: 'video',
          action: 'rejected',
          param: undefined,
          message: 'video generation is not enabled for this tenant',
        },
      ],
    });
  });

  it('reports nothing for a compliant request', async () => {
    const policy = await loadPolicy('{ mode: shadow, samples: { maximum: 4 } }');
    const request = body('{"samples":2}');
    expect(applyPolicy(policy, 'images.create', request)).toEqual(unchanged(request));
  });
});

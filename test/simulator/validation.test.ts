// The service's own validation of creation bodies (upstream-api.md), answered in its error envelope:
// every ranged field at min-1, min, max and max+1, every type, every enum, null for every field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { call, invalid, postImage, postVideo, startTestSimulator } from './simulator-client.ts';

let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startTestSimulator({ requestsPerMinute: 100_000, maxQueued: 100_000 });
});
afterAll(async () => {
  await simulator.close();
});

const RANGES = [
  ['outputQuality', 1, 99],
  ['samples', 1, 20],
  ['CFGScale', 1, 50],
  ['steps', 1, 50],
  ['input.seedImageStrength', 0, 1],
  ['dimensions.width', 128, 2048],
  ['dimensions.height', 128, 2048],
] as const;

function bodyWith(path: string, value: unknown): Record<string, unknown> {
  const [first, second] = path.split('.') as [string, string | undefined];
  return second === undefined ? { [first]: value } : { [first]: { [second]: value } };
}

async function expectAccepted(body: unknown) {
  const answer = await postImage(simulator, body);
  expect(answer.status).toBe(200);
  expect(answer.body).toEqual({
    status: 200,
    data: { requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown },
  });
}

async function expectRefused(body: unknown, param: string, message: string) {
  const answer = await postImage(simulator, body);
  expect(answer.status).toBe(400);
  expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(answer.body).toEqual(invalid(param, message));
}

describe('image ranges are inclusive', () => {
  test.each(RANGES.flatMap(([path, min, max]) => [[path, min, max]] as const))(
    '%s: %d..%d',
    async (path, min, max) => {
      await expectRefused(bodyWith(path, min - 1), path, `must be at least ${min}`);
      await expectAccepted(bodyWith(path, min));
      await expectAccepted(bodyWith(path, max));
      await expectRefused(bodyWith(path, max + 1), path, `must be at most ${max}`);
    },
  );

  test('seed: 0..9223372036854775807 judged on its exact digits', async () => {
    await expectRefused({ seed: -1 }, 'seed', 'must be at least 0');
    await expectAccepted({ seed: 0 });
    // JSON.stringify cannot write these digits; the bodies are sent as written.
    const atMax = await call(simulator, 'POST', '/v1/images/generations', {
      body: '{"seed":9223372036854775807}',
    });
    expect(atMax.status).toBe(200);
    const pastMax = await call(simulator, 'POST', '/v1/images/generations', {
      body: '{"seed":9223372036854775808}',
    });
    expect(pastMax.body).toEqual(invalid('seed', 'must be at most 9223372036854775807'));
  });

  test('fractions are fine for number fields and refused for integer fields', async () => {
    await expectAccepted({ CFGScale: 7.5, input: { seedImageStrength: 0.35 } });
    await expectRefused({ CFGScale: 50.01 }, 'CFGScale', 'must be at most 50');
    await expectRefused({ samples: 1.5 }, 'samples', 'must be an integer');
    await expectRefused({ seed: 2.5 }, 'seed', 'must be an integer');
  });
});

describe('image types', () => {
  test.each([
    ['requestId', 42, 'must be a string'],
    ['model', true, 'must be a string'],
    ['scanResults', 'yes', 'must be a boolean'],
    ['input', 'a fox', 'must be an object'],
    ['input.positivePrompt', 7, 'must be a string'],
    ['input.negativePrompt', [], 'must be a string'],
    ['input.seedImage', {}, 'must be a string'],
    ['input.seedImageStrength', '0.5', 'must be a number'],
    ['outputQuality', '95', 'must be an integer'],
    ['samples', true, 'must be an integer'],
    ['CFGScale', '5', 'must be a number'],
    ['steps', [25], 'must be an integer'],
    ['seed', '42', 'must be an integer'],
    ['scheduler', 3, 'must be a string'],
    ['advancedFeatures', [], 'must be an object'],
    ['advancedFeatures.layerDiffuse', 1, 'must be a boolean'],
    ['dimensions', 1024, 'must be an object'],
    ['dimensions.width', '1024', 'must be an integer'],
    ['dimensions.outpaint', 'all', 'must be an object'],
  ])('%s = %j', async (path, value, message) => {
    await expectRefused(bodyWith(path, value), path, message);
  });

  test.each(['top', 'bottom', 'left', 'right'])('dimensions.outpaint.%s must be an integer', async (side) => {
    await expectRefused(
      { dimensions: { outpaint: { [side]: 'x' } } },
      `dimensions.outpaint.${side}`,
      'must be an integer',
    );
    await expectAccepted({ dimensions: { outpaint: { [side]: 64 } } });
  });
});

describe('image enums and formats', () => {
  test.each(['low', 'medium', 'high'])('safetyLevel %s', async (value) => {
    await expectAccepted({ safetyLevel: value });
  });
  test.each(['url', 'base64', 'dataURI'])('outputType %s', async (value) => {
    await expectAccepted({ outputType: value });
  });
  test('a wrong enum value', async () => {
    await expectRefused({ safetyLevel: 'none' }, 'safetyLevel', 'must be one of low, medium, high');
    await expectRefused({ outputType: 'datauri' }, 'outputType', 'must be one of url, base64, dataURI');
  });

  test.each([
    ['a v4 UUID in upper case', '3F2504E0-4F89-41D3-9A0C-0305E82C3301', true],
    ['a v1 UUID', 'c232ab00-9414-11ec-b3c8-9f6bdeced846', false],
    ['not a UUID', 'request-1', false],
  ])('requestId: %s', async (_name, requestId, accepted) => {
    if (accepted) await expectAccepted({ requestId });
    else await expectRefused({ requestId }, 'requestId', 'must be a UUID v4');
  });

  test.each([
    ['vendor@model', true],
    ['acme@img-2.1', true],
    ['no-at-sign', false],
    ['@model', false],
    ['vendor@', false],
    ['a@b@c', false],
    ['vendor @model', false],
  ])('model %j', async (model, accepted) => {
    if (accepted) await expectAccepted({ model });
    else await expectRefused({ model }, 'model', 'must have the form <vendor>@<model_name>');
  });
});

describe('nullable and tolerant', () => {
  const FIELDS = [
    'requestId',
    'model',
    'safetyLevel',
    'scanResults',
    'input',
    'outputQuality',
    'outputType',
    'samples',
    'CFGScale',
    'steps',
    'seed',
    'scheduler',
    'advancedFeatures',
    'dimensions',
  ];
  test.each(FIELDS)('%s: null', async (field) => {
    await expectAccepted({ [field]: null });
  });
  test('null for every field at once, nested members included', async () => {
    await expectAccepted({
      ...Object.fromEntries(FIELDS.map((field) => [field, null])),
    });
    await expectAccepted({
      input: { positivePrompt: null, negativePrompt: null, seedImage: null, seedImageStrength: null },
      advancedFeatures: { layerDiffuse: null },
      dimensions: {
        width: null,
        height: null,
        outpaint: { top: null, bottom: null, left: null, right: null },
      },
    });
  });
  test('unknown members are ignored, at the top level and inside objects', async () => {
    await expectAccepted({
      futureField: 1,
      input: { style: 'x' },
      advancedFeatures: { hires: true },
      dimensions: { tile: true },
    });
  });
  test('an empty body object is a valid request', async () => {
    await expectAccepted({});
  });
});

describe('several problems: one per field, type and required before range', () => {
  test('details list every field; the headline names the most useful', async () => {
    const answer = await postImage(simulator, { samples: 21, steps: 'many', safetyLevel: 'none' });
    expect(answer.body).toEqual({
      status: 400,
      error: {
        code: 'invalid_parameter',
        type: 'validation_error',
        message: 'steps must be an integer',
        param: 'steps',
        details: [
          { param: 'steps', message: 'must be an integer' },
          { param: 'safetyLevel', message: 'must be one of low, medium, high' },
          { param: 'samples', message: 'must be at most 20' },
        ],
      },
    });
  });
});

describe('video', () => {
  test('duration is required', async () => {
    expect((await postVideo(simulator, {})).body).toEqual(invalid('duration', 'is required'));
    expect((await postVideo(simulator, { duration: null })).body).toEqual(
      invalid('duration', 'must be an integer'),
    );
    expect((await postVideo(simulator, { duration: 5.5 })).body).toEqual(
      invalid('duration', 'must be an integer'),
    );
  });

  test('duration 2..12 [guess]', async () => {
    expect((await postVideo(simulator, { duration: 1 })).body).toEqual(
      invalid('duration', 'must be at least 2'),
    );
    expect((await postVideo(simulator, { duration: 2 })).status).toBe(200);
    expect((await postVideo(simulator, { duration: 12 })).status).toBe(200);
    expect((await postVideo(simulator, { duration: 13 })).body).toEqual(
      invalid('duration', 'must be at most 12'),
    );
  });

  test('dimensions must be a published size', async () => {
    for (const [width, height] of [
      [640, 640],
      [1504, 640],
      [2176, 928],
    ]) {
      expect((await postVideo(simulator, { duration: 5, dimensions: { width, height } })).status).toBe(200);
    }
    const refused = await postVideo(simulator, { duration: 5, dimensions: { width: 640, height: 480 } });
    expect(refused.status).toBe(400);
    expect((refused.body as { error: { param: string; message: string } }).error).toMatchObject({
      param: 'dimensions',
      message: expect.stringMatching(
        /^dimensions must be one of the published sizes: 640x640, 736x544, .*, 2176x928$/,
      ) as unknown,
    });
  });

  test('requestId, model, seed and input follow the image rules', async () => {
    expect((await postVideo(simulator, { duration: 5, requestId: 'x' })).body).toEqual(
      invalid('requestId', 'must be a UUID v4'),
    );
    expect((await postVideo(simulator, { duration: 5, model: 'seedance' })).body).toEqual(
      invalid('model', 'must have the form <vendor>@<model_name>'),
    );
    expect((await postVideo(simulator, { duration: 5, seed: -1 })).body).toEqual(
      invalid('seed', 'must be at least 0'),
    );
    expect((await postVideo(simulator, { duration: 5, input: { frameImage: 1 } })).body).toEqual(
      invalid('input.frameImage', 'must be a string'),
    );
  });
});

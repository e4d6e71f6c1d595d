// docs/validation.md#the-schema-400-invalid_parameter--unknown_parameter, images.create: every field of the upstream table at its bounds, with each wrong
// type, with null, and every enum value. A refused body never reaches the upstream; an accepted one
// reaches it byte for byte.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  IMAGES,
  errorBody,
  expectForwardedVerbatim,
  expectRefused,
  parameterError,
  postJson,
  unknownMember,
  useValidationGateway,
} from './validation-client.ts';

const harness = useValidationGateway();

/** `{"dimensions":{"width":127}}` from `dimensions.width` and `127`, the value kept as raw JSON text. */
function bodyWith(path: string, valueJson: string): string {
  return path.split('.').reduceRight((inner, name) => `{${JSON.stringify(name)}:${inner}}`, valueJson);
}

async function expectAccepted(body: string, status = 200): Promise<void> {
  const answer = await postJson(harness, IMAGES, body);
  expect(answer.status).toBe(status);
  expectForwardedVerbatim(harness, IMAGES, body);
}

async function expectParameterRefused(body: string, param: string, message: string): Promise<void> {
  expectRefused(harness, await postJson(harness, IMAGES, body), parameterError(param, message));
}

type FieldKind = 'integer' | 'number' | 'string' | 'boolean' | 'object' | 'safetyLevel' | 'outputType';

const IMAGE_FIELDS: [path: string, kind: FieldKind][] = [
  ['requestId', 'string'],
  ['model', 'string'],
  ['safetyLevel', 'safetyLevel'],
  ['scanResults', 'boolean'],
  ['input', 'object'],
  ['input.positivePrompt', 'string'],
  ['input.negativePrompt', 'string'],
  ['input.seedImage', 'string'],
  ['input.seedImageStrength', 'number'],
  ['outputQuality', 'integer'],
  ['outputType', 'outputType'],
  ['samples', 'integer'],
  ['CFGScale', 'number'],
  ['steps', 'integer'],
  ['seed', 'integer'],
  ['scheduler', 'string'],
  ['advancedFeatures', 'object'],
  ['advancedFeatures.layerDiffuse', 'boolean'],
  ['dimensions', 'object'],
  ['dimensions.width', 'integer'],
  ['dimensions.height', 'integer'],
  ['dimensions.outpaint', 'object'],
  ['dimensions.outpaint.top', 'integer'],
  ['dimensions.outpaint.bottom', 'integer'],
  ['dimensions.outpaint.left', 'integer'],
  ['dimensions.outpaint.right', 'integer'],
];

const WRONG_TYPES: Record<FieldKind, { values: string[]; message: string }> = {
  integer: { values: ['"5"', 'true', '[]', '{}', '1.5'], message: 'must be an integer' },
  number: { values: ['"5"', 'true', '[]', '{}'], message: 'must be a number' },
  string: { values: ['5', 'true', '[]', '{}'], message: 'must be a string' },
  boolean: { values: ['"true"', '1', '[]', '{}'], message: 'must be a boolean' },
  object: { values: ['"x"', '1', 'true', '[]'], message: 'must be an object' },
  safetyLevel: { values: ['"extreme"', '"LOW"', '1', 'true'], message: 'must be one of low, medium, high' },
  outputType: { values: ['"dataUri"', '"png"', '1', '[]'], message: 'must be one of url, base64, dataURI' },
};

describe('every field is optional and nullable', () => {
  test.each(IMAGE_FIELDS.map(([path]) => path))(
    '%s: null is accepted and forwarded as sent',
    async (path) => {
      await expectAccepted(bodyWith(path, 'null'));
    },
  );

  test('an empty object is a complete request', async () => {
    await expectAccepted('{}');
  });
});

describe('each wrong type: 400 invalid_parameter naming the field', () => {
  const cases = IMAGE_FIELDS.flatMap(([path, kind]) =>
    WRONG_TYPES[kind].values.map((value) => [path, value, WRONG_TYPES[kind].message] as const),
  );
  test.each(cases)('%s = %s', async (path, value, message) => {
    await expectParameterRefused(bodyWith(path, value), path, message);
  });
});

describe('documented inclusive ranges: min-1, min, max, max+1', () => {
  test.each([
    ['outputQuality', '0', 'must be at least 1'],
    ['outputQuality', '1', undefined],
    ['outputQuality', '99', undefined],
    ['outputQuality', '100', 'must be at most 99'],
    ['samples', '0', 'must be at least 1'],
    ['samples', '1', undefined],
    ['samples', '20', undefined],
    ['samples', '21', 'must be at most 20'],
    ['samples', '100000000000000000000', 'must be at most 20'],
    ['CFGScale', '0', 'must be at least 1'],
    ['CFGScale', '0.999', 'must be at least 1'],
    ['CFGScale', '1', undefined],
    ['CFGScale', '7.5', undefined],
    ['CFGScale', '50', undefined],
    ['CFGScale', '50.001', 'must be at most 50'],
    ['CFGScale', '51', 'must be at most 50'],
    ['steps', '0', 'must be at least 1'],
    ['steps', '1', undefined],
    ['steps', '50', undefined],
    ['steps', '51', 'must be at most 50'],
    ['seed', '-1', 'must be at least 0'],
    ['seed', '0', undefined],
  ] as const)('%s = %s', async (path, value, message) => {
    const body = bodyWith(path, value);
    if (message === undefined) await expectAccepted(body);
    else await expectParameterRefused(body, path, message);
  });

  test('an integral number written with a fraction or exponent is an integer, and is forwarded as written', async () => {
    await expectAccepted('{"samples":2.0,"steps":2e1}');
  });
});

describe('seed: judged on its exact digits, forwarded with every digit', () => {
  test.each(['0', '9007199254740992', '9007199254740993', '9223372036854775807'])(
    'seed %s arrives at the upstream byte for byte',
    async (seed) => {
      const body = `{"seed":${seed},"input":{"positivePrompt":"a fox"}}`;
      await expectAccepted(body);
      expect(harness.simulator.received[0]!.body.toString('utf8')).toContain(`"seed":${seed},`);
    },
  );

  test.each([
    ['9223372036854775808', 'must be at most 9223372036854775807'],
    ['18446744073709551616', 'must be at most 9223372036854775807'],
    ['1e19', 'must be at most 9223372036854775807'],
    ['-9223372036854775808', 'must be at least 0'],
  ])('seed %s: 400', async (seed, message) => {
    await expectParameterRefused(`{"seed":${seed}}`, 'seed', message);
  });
});

describe('ranges the upstream page only guesses are not the gateway to enforce', () => {
  test.each([
    ['input.seedImageStrength', '-0.5'],
    ['input.seedImageStrength', '1.5'],
    ['dimensions.width', '127'],
    ['dimensions.width', '2049'],
    ['dimensions.height', '127'],
    ['dimensions.height', '2049'],
    ['dimensions.outpaint.top', '-1'],
  ])('%s = %s reaches the upstream, which judges it', async (path, value) => {
    const body = bodyWith(path, value);
    await postJson(harness, IMAGES, body);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('enums: every value, and near misses', () => {
  test.each([
    ['safetyLevel', 'low'],
    ['safetyLevel', 'medium'],
    ['safetyLevel', 'high'],
    ['outputType', 'url'],
    ['outputType', 'base64'],
    ['outputType', 'dataURI'],
  ])('%s = %s is accepted', async (path, value) => {
    await expectAccepted(bodyWith(path, JSON.stringify(value)));
  });
  // The near misses ("LOW", "dataUri") are in the wrong-type table above.
});

describe('requestId: a UUID v4', () => {
  test.each([randomUUID(), randomUUID().toUpperCase()])('%s is accepted', async (requestId) => {
    await expectAccepted(JSON.stringify({ requestId }));
  });

  test.each([
    ['a UUID v1', 'c232ab00-9414-11ec-b3c8-9f6bdeced846'],
    ['a UUID v7', '01890a5d-ac96-774b-bcce-b302099a8057'],
    ['a v4 with a wrong variant', '3b241101-e2bb-4255-c617-a8a4f3a7c0ff'],
    ['no hyphens', '3b241101e2bb42558617a8a4f3a7c0ff'],
    ['braces', '{3b241101-e2bb-4255-8617-a8a4f3a7c0ff}'],
    ['a trailing newline', '3b241101-e2bb-4255-8617-a8a4f3a7c0ff\n'],
    ['empty', ''],
  ])('%s: 400', async (_name, requestId) => {
    await expectParameterRefused(JSON.stringify({ requestId }), 'requestId', 'must be a UUID v4');
  });
});

describe('model: <vendor>@<model_name>', () => {
  test.each(['runware@flux-1.1-pro', 'a@b', 'bytedance@seedance-1.0-pro-fast'])(
    '%s is accepted',
    async (model) => {
      await expectAccepted(JSON.stringify({ model }));
    },
  );

  test.each(['flux', '@flux', 'runware@', 'a@b@c', 'run ware@flux', 'runware@flux\n', ''])(
    '%j: 400',
    async (model) => {
      await expectParameterRefused(
        JSON.stringify({ model }),
        'model',
        'must have the form <vendor>@<model_name>',
      );
    },
  );
});

describe('unknown members', () => {
  test('inside input, dimensions, outpaint and advancedFeatures they are passed through', async () => {
    await expectAccepted(
      '{"input":{"style":"ink"},"dimensions":{"tile":true,"outpaint":{"blend":2}},"advancedFeatures":{"hiresFix":{"scale":2}}}',
    );
  });

  test('at the top level: 400 unknown_parameter', async () => {
    expectRefused(harness, await postJson(harness, IMAGES, '{"sampels":2}'), unknownMember('sampels'));
  });
});

describe('several problems: the first names param, details list them all', () => {
  test('a type problem comes before an unknown field, which comes before a range', async () => {
    const answer = await postJson(
      harness,
      IMAGES,
      '{"steps":51,"color":"red","samples":"4","outputQuality":0}',
    );
    expectRefused(
      harness,
      answer,
      errorBody(400, 'invalid_parameter', 'samples must be an integer', {
        param: 'samples',
        details: [
          { param: 'samples', message: 'must be an integer' },
          { param: 'color', message: 'is not a known parameter' },
          { param: 'outputQuality', message: 'must be at least 1' },
          { param: 'steps', message: 'must be at most 50' },
        ],
      }),
    );
  });

  test('an unknown field first: 400 unknown_parameter, with the other problems in details', async () => {
    const answer = await postJson(harness, IMAGES, '{"steps":51,"color":"red"}');
    expectRefused(
      harness,
      answer,
      unknownMember('color', [{ param: 'steps', message: 'must be at most 50' }]),
    );
  });
});

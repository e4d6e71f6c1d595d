// docs/validation.md#the-schema-400-invalid_parameter--unknown_parameter, videos.create: duration required and an integer, dimensions one of the published
// sizes, and the same requestId, model and seed rules as images. Refused bodies never reach the upstream.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { VIDEO_SIZES } from '../../src/maxai/schemas.ts';
import {
  VIDEOS,
  errorBody,
  expectForwardedVerbatim,
  expectRefused,
  parameterError,
  postJson,
  unknownMember,
  useValidationGateway,
} from './validation-client.ts';

const harness = useValidationGateway();

const PUBLISHED_SIZES = VIDEO_SIZES.map(({ width, height }) => `${width}x${height}`).join(', ');

async function expectAccepted(body: string, status = 200): Promise<void> {
  expect((await postJson(harness, VIDEOS, body)).status).toBe(status);
  expectForwardedVerbatim(harness, VIDEOS, body);
}

async function expectParameterRefused(body: string, param: string, message: string): Promise<void> {
  expectRefused(harness, await postJson(harness, VIDEOS, body), parameterError(param, message));
}

describe('duration', () => {
  test.each([
    ['missing', '{}', 'is required'],
    ['missing beside other fields', '{"input":{"positivePrompt":"waves"}}', 'is required'],
    ['null', '{"duration":null}', 'must be an integer'],
    ['a fraction', '{"duration":4.5}', 'must be an integer'],
    ['a string', '{"duration":"5"}', 'must be an integer'],
    ['a boolean', '{"duration":true}', 'must be an integer'],
    ['an array', '{"duration":[5]}', 'must be an integer'],
  ])('%s: 400', async (_name, body, message) => {
    await expectParameterRefused(body, 'duration', message);
  });

  test('an integer is accepted', async () => {
    await expectAccepted('{"duration":5}');
  });

  test.each(['1', '13'])(
    'duration %s (outside the guessed 2..12) reaches the upstream, which judges it',
    async (duration) => {
      const body = `{"duration":${duration}}`;
      await postJson(harness, VIDEOS, body);
      expectForwardedVerbatim(harness, VIDEOS, body);
    },
  );
});

describe('dimensions: one of the published sizes', () => {
  test.each(VIDEO_SIZES.map(({ width, height, tier }) => [width, height, tier] as const))(
    '%ix%i (%s) is accepted',
    async (width, height) => {
      await expectAccepted(`{"duration":5,"dimensions":{"width":${width},"height":${height}}}`);
    },
  );

  test('null is accepted', async () => {
    await expectAccepted('{"duration":5,"dimensions":null}');
  });

  test.each([
    ['an unpublished size', '{"width":640,"height":480}'],
    ['a published size turned around', '{"width":640,"height":960}'],
    ['a width alone', '{"width":640}'],
    ['nothing', '{}'],
  ])('%s: 400', async (_name, dimensions) => {
    await expectParameterRefused(
      `{"duration":5,"dimensions":${dimensions}}`,
      'dimensions',
      `must be one of the published sizes: ${PUBLISHED_SIZES}`,
    );
  });

  test('dimensions of the wrong type: 400', async () => {
    await expectParameterRefused('{"duration":5,"dimensions":"640x640"}', 'dimensions', 'must be an object');
  });

  test('a width of the wrong type: 400', async () => {
    await expectParameterRefused(
      '{"duration":5,"dimensions":{"width":"640","height":640}}',
      'dimensions.width',
      'must be an integer',
    );
  });

  test('a fractional height is both mistyped and no published size: both are listed', async () => {
    const answer = await postJson(
      harness,
      VIDEOS,
      '{"duration":5,"dimensions":{"width":640,"height":640.5}}',
    );
    expectRefused(
      harness,
      answer,
      errorBody(400, 'invalid_parameter', 'dimensions.height must be an integer', {
        param: 'dimensions.height',
        details: [
          { param: 'dimensions.height', message: 'must be an integer' },
          { param: 'dimensions', message: `must be one of the published sizes: ${PUBLISHED_SIZES}` },
        ],
      }),
    );
  });
});

describe('requestId, model and seed follow the image rules', () => {
  test('valid values are accepted, the 19-digit seed arriving with every digit', async () => {
    await expectAccepted(
      `{"duration":5,"requestId":"${randomUUID()}","model":"bytedance@seedance-1.0-pro-fast","seed":9223372036854775807}`,
    );
  });

  test.each([
    ['requestId', '"c232ab00-9414-11ec-b3c8-9f6bdeced846"', 'must be a UUID v4'],
    ['model', '"seedance"', 'must have the form <vendor>@<model_name>'],
    ['seed', '9223372036854775808', 'must be at most 9223372036854775807'],
    ['seed', '-1', 'must be at least 0'],
    ['seed', '"1"', 'must be an integer'],
  ])('%s = %s: 400', async (param, value, message) => {
    await expectParameterRefused(`{"duration":5,"${param}":${value}}`, param, message);
  });

  test('an image-only field is unknown here: 400 unknown_parameter', async () => {
    expectRefused(
      harness,
      await postJson(harness, VIDEOS, '{"duration":5,"samples":2}'),
      unknownMember('samples'),
    );
  });

  test('unknown members inside input and dimensions pass through', async () => {
    await expectAccepted(
      '{"duration":5,"input":{"camera":"pan"},"dimensions":{"width":640,"height":640,"fps":24}}',
    );
  });
});

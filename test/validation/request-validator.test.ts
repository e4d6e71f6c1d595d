// The schemas in the gateway's mode (unknown top-level fields rejected, no guessed ranges) and the
// shape of the problems the gateway will map to its own codes.
import { describe, expect, test } from 'vitest';
import { parseJsonLossless } from '../../src/simulator/lossless-json.ts';
import { imageRequestSchema, videoRequestSchema } from '../../src/maxai/schemas.ts';
import { createRequestValidator, describeProblem } from '../../src/validation/request-validator.ts';

const GATEWAY = { unknownTopLevel: 'reject', guessedRanges: false } as const;
const validateImage = createRequestValidator(imageRequestSchema(GATEWAY));
const validateVideo = createRequestValidator(videoRequestSchema(GATEWAY));

describe('gateway mode', () => {
  test('an unknown top-level field is a problem of kind unknown_field; unknown nested members pass', () => {
    expect(validateImage({ sampels: 2, input: { style: 'x' } })).toEqual({
      ok: false,
      problems: [{ param: 'sampels', message: 'is not a known parameter', kind: 'unknown_field' }],
    });
    expect(validateImage({ input: { style: 'x' }, dimensions: { tile: true } })).toEqual({ ok: true });
  });

  test('guessed ranges are not applied, documented ones are', () => {
    expect(validateImage({ dimensions: { width: 4096 }, input: { seedImageStrength: 3 } })).toEqual({
      ok: true,
    });
    expect(validateVideo({ duration: 60 })).toEqual({ ok: true });
    expect(validateImage({ samples: 21 })).toEqual({
      ok: false,
      problems: [{ param: 'samples', message: 'must be at most 20', kind: 'range' }],
    });
  });

  test('the seed is judged on its exact digits', () => {
    expect(validateImage(parseJsonLossless('{"seed":9223372036854775807}'))).toEqual({ ok: true });
    expect(validateImage(parseJsonLossless('{"seed":9223372036854775808}'))).toEqual({
      ok: false,
      problems: [{ param: 'seed', message: 'must be at most 9223372036854775807', kind: 'range' }],
    });
    expect(validateImage(parseJsonLossless('{"samples":100000000000000000000}'))).toEqual({
      ok: false,
      problems: [{ param: 'samples', message: 'must be at most 20', kind: 'range' }],
    });
  });

  test('a body that is not an object', () => {
    const result = validateImage([1]);
    expect(result).toEqual({
      ok: false,
      problems: [{ param: '', message: 'must be a JSON object', kind: 'type' }],
    });
    expect(result.ok ? undefined : describeProblem(result.problems[0]!)).toBe('body must be a JSON object');
  });

  test('the video size list is documented, so it applies in gateway mode too', () => {
    expect(validateVideo({ duration: 5, dimensions: { width: 640, height: 640 } })).toEqual({ ok: true });
    expect(validateVideo({ duration: 5, dimensions: { width: 641, height: 640 } })).toMatchObject({
      ok: false,
      problems: [{ param: 'dimensions', kind: 'enum' }],
    });
    expect(validateVideo({ duration: 5, safetyLevel: 'low', extra: 1 })).toEqual({
      ok: false,
      problems: [{ param: 'extra', message: 'is not a known parameter', kind: 'unknown_field' }],
    });
  });
});

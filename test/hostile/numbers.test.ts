// docs/validation.md#exact-numbers: every number reaches the upstream with the exact text the client wrote, whether
// or not the policy rewrote the body, and every integer type and range is judged on the exact decimal
// value. Through a real listening gateway; the simulator records what the upstream received.
import { describe, expect, test } from 'vitest';
import { sentWithAssignedRequestId } from '../support/gateway-harness.ts';
import {
  IMAGES,
  VIDEOS,
  expectForwardedVerbatim,
  expectRefused,
  parameterError,
  postJson,
  useValidationGateway,
} from '../validation/validation-client.ts';

const harness = useValidationGateway({
  alphaPolicyYaml: '{ samples: { maximum: 4 }, video: { maxDurationSeconds: 10 } }',
});

const SEED_MAXIMUM = '9223372036854775807';

describe('numbers arrive as written when the policy leaves the body alone', () => {
  test.each([
    ['a 19-digit seed written with a fraction', '{"seed":1234567890123456789.0}'],
    ['the largest seed written with an exponent', '{"seed":9.223372036854775807e18}'],
    ['the largest seed, every digit', `{"seed":${SEED_MAXIMUM}}`],
    ['a seed of zero written as -0', '{"seed":-0}'],
    ['CFGScale 20.0', '{"CFGScale":20.0}'],
    ['samples 4.0 and 4e0, within the tenant bound', '{"samples":4.0,"steps":4e0}'],
    ['1e400 in a passed-through member', '{"input":{"positivePrompt":"x","strength":1e400}}'],
    ['a 30-digit integer in a passed-through member', '{"input":{"n":123456789012345678901234567890}}'],
    ['-1e-400 in a passed-through member', '{"advancedFeatures":{"x":-1e-400}}'],
    ['an integral width written as 640.0', '{"dimensions":{"width":640.0,"height":6.4e2}}'],
  ])('%s', async (_name, body) => {
    const answer = await postJson(harness, IMAGES, body);
    expect(answer.headers.get('gengate-policy')).toBeNull();
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('numbers arrive as written when the policy rewrites the body', () => {
  test.each([
    ['a seed with a fraction', '{"samples":8,"seed":1234567890123456789.0}', '8'],
    ['a seed with an exponent', '{"samples":8.0, "seed" : 9.223372036854775807e18 }', '8.0'],
    [
      'numbers everywhere',
      '{"CFGScale":20.0,"samples":2e1,"input":{"n":123456789012345678901234567890,"x":1e400},"seed":-0}',
      '2e1',
    ],
  ])('%s', async (_name, body, samples) => {
    const answer = await postJson(harness, IMAGES, body);
    expect(answer.headers.get('gengate-policy')).toBe(`samples=clamped;from=${Number(samples)};to=4`);
    // Only the samples value changes (with the spaces around it); every other byte is the client's.
    const clamped = body.replace(/("samples"\s*:)\s*[^,}]+/, '$1' + '4');
    expect(harness.simulator.received.map((request) => request.body.toString('utf8'))).toEqual([
      sentWithAssignedRequestId(harness, clamped).toString('utf8'),
    ]);
  });
});

describe('integers and ranges are judged on the exact decimal value', () => {
  test.each([
    ['samples', '4.0000000000000001', 'must be an integer'],
    ['steps', '2.0000000000000001', 'must be an integer'],
    ['samples', '1e-400', 'must be an integer'],
    ['samples', '1e400', 'must be at most 20'],
    ['samples', '20.0000000000000000000001', 'must be an integer'],
    ['samples', '2.1e1', 'must be at most 20'],
    ['samples', '0e5', 'must be at least 1'],
    ['steps', '-0', 'must be at least 1'],
    ['seed', '-1e-400', 'must be an integer'],
    ['seed', '-1', 'must be at least 0'],
    ['seed', '9223372036854775808', `must be at most ${SEED_MAXIMUM}`],
    ['seed', '9.223372036854775808e18', `must be at most ${SEED_MAXIMUM}`],
    ['seed', '9223372036854775807.5', 'must be an integer'],
    ['seed', '1e400', `must be at most ${SEED_MAXIMUM}`],
    ['seed', `1${'0'.repeat(100_000)}`, `must be at most ${SEED_MAXIMUM}`],
    ['CFGScale', '50.0000000000000000001', 'must be at most 50'],
    ['CFGScale', '0.9999999999999999999', 'must be at least 1'],
    ['outputQuality', '99.00000000000000001', 'must be an integer'],
  ])('%s %s', async (field, value, message) => {
    const answer = await postJson(harness, IMAGES, `{"${field}":${value}}`);
    expectRefused(harness, answer, parameterError(field, message));
  });

  test('the same on nested fields', async () => {
    const answer = await postJson(
      harness,
      IMAGES,
      '{"dimensions":{"outpaint":{"top":1.0000000000000000001}}}',
    );
    expectRefused(harness, answer, parameterError('dimensions.outpaint.top', 'must be an integer'));
  });

  test('the seed 1234567890123456789.0 is the integer 1234567890123456789', async () => {
    const body = '{"seed":1234567890123456789.0}';
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('the policy judges the same exact values', () => {
  test('a duration of 1e1 is 10 seconds, within the tenant bound, forwarded as written', async () => {
    const body = '{"duration":1e1}';
    await postJson(harness, VIDEOS, body);
    expectForwardedVerbatim(harness, VIDEOS, body);
  });

  test.each(['1.1e1', '1e400', `1${'0'.repeat(400)}`])('a duration of %s exceeds it', async (duration) => {
    const answer = await postJson(harness, VIDEOS, `{"duration":${duration}}`);
    const message = 'duration must be at most 10 for this tenant';
    expectRefused(harness, answer, {
      status: 403,
      error: { code: 'policy_violation', type: 'permission_error', message, param: 'duration' },
    });
  });

  test('a duration of 10.000000000000000000001 is no integer: validation refuses it first', async () => {
    const answer = await postJson(harness, VIDEOS, '{"duration":10.000000000000000000001e0}');
    expectRefused(harness, answer, parameterError('duration', 'must be an integer'));
  });

  test('samples 4.0 is not clamped; 4.0000000000000001 is refused, not clamped to 4', async () => {
    expect((await postJson(harness, IMAGES, '{"samples":4.0}')).headers.get('gengate-policy')).toBeNull();
    harness.simulator.clearReceived();
    const answer = await postJson(harness, IMAGES, '{"samples":4.0000000000000001}');
    expectRefused(harness, answer, parameterError('samples', 'must be an integer'));
  });
});

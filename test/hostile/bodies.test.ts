// docs/validation.md#the-cost-of-judging-a-body against a hostile client: bodies built to be slow (deep, wide, long, huge
// numbers), bodies in other encodings, and bodies that could be read two ways. Each gets its exact
// answer through a real listening gateway, a refused one reaches nothing upstream, an accepted one
// reaches it byte for byte, and the gateway keeps serving everyone else.
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import { performance } from 'node:perf_hooks';
import { describe, expect, test } from 'vitest';
import { HOSTILE_SHAPES, PLAIN_SHAPE } from '../../bench/hostile-bodies.ts';
import { MAX_EXPLAINED_PROBLEMS } from '../../src/validation/request-validator.ts';
import { MAX_JSON_VALUES } from '../../src/validation/json-structure.ts';
import {
  IMAGES,
  NOT_UTF8_JSON,
  errorBody,
  expectForwardedVerbatim,
  expectRefused,
  invalidJson,
  parameterError,
  postJson,
  unknownMember,
  useValidationGateway,
} from '../validation/validation-client.ts';

const harness = useValidationGateway();

const MEBIBYTE = 1_048_576;
const TOO_MANY_VALUES = `the request body holds more than ${MAX_JSON_VALUES} values`;
const TOO_DEEP = 'the request body nests deeper than 32 levels';
// Refused from the headers alone (src/gateway/request-target.ts), before the body is read.
const COMPRESSED = 'compressed request bodies are not accepted';
const NOT_UTF8_MEDIA = 'request bodies must be application/json in UTF-8';

async function expectStillServing(): Promise<void> {
  harness.simulator.clearReceived();
  const body = '{"samples":1}';
  expect((await postJson(harness, IMAGES, body)).status).toBe(200);
  expectForwardedVerbatim(harness, IMAGES, body);
}

describe('body bombs are refused before anything reaches the upstream', () => {
  test.each([
    ['33 levels of arrays', `{"input":{"a":${'['.repeat(31)}${']'.repeat(31)}}}`, TOO_DEEP],
    ['a hundred thousand open brackets', '['.repeat(100_000), TOO_DEEP],
    ['a million zeros in one array', `{"input":{"a":[${'0,'.repeat(999_999)}0]}}`, TOO_MANY_VALUES],
    [
      'a hundred thousand members',
      `{"input":{${Array.from({ length: 100_000 }, (_, index) => `"m${index}":0`).join(',')}}}`,
      TOO_MANY_VALUES,
    ],
    ['a hundred thousand empty strings', `{"input":{"a":[${'"",'.repeat(99_999)}""]}}`, TOO_MANY_VALUES],
    ['a hundred thousand nulls', `{"input":{"a":[${'null,'.repeat(99_999)}null]}}`, TOO_MANY_VALUES],
  ])('%s: 400 invalid_json', async (_name, body, message) => {
    expectRefused(harness, await postJson(harness, IMAGES, body), invalidJson(message));
  });

  test('a seed of a million digits: judged on its digits, refused', async () => {
    const answer = await postJson(harness, IMAGES, `{"seed":${'9'.repeat(MEBIBYTE)}}`);
    expectRefused(harness, answer, parameterError('seed', 'must be at most 9223372036854775807'));
  });

  test(`thousands of unknown members: the first ${MAX_EXPLAINED_PROBLEMS} are explained`, async () => {
    const names = Array.from({ length: MAX_JSON_VALUES - 1 }, (_, index) => `m${index}`);
    const answer = await postJson(harness, IMAGES, `{${names.map((name) => `"${name}":0`).join(',')}}`);
    const [first = '', ...others] = names.slice(0, MAX_EXPLAINED_PROBLEMS);
    const details = others.map((param) => ({ param, message: 'is not a known parameter' }));
    expectRefused(harness, answer, unknownMember(first, details));
  });

  test('the gateway still serves', expectStillServing);
});

describe('large bodies within the limits arrive byte for byte', () => {
  test.each([
    ['a prompt of five megabytes', `{"input":{"positivePrompt":"${'a'.repeat(5 * MEBIBYTE)}"}}`],
    ['a prompt of escaped quotes', `{"input":{"positivePrompt":"${'\\"'.repeat(MEBIBYTE / 2)}"}}`],
    ['a megabyte of spaces between tokens', `{"samples":${' '.repeat(MEBIBYTE)}1${'\n'.repeat(1000)}}`],
    ['32 levels deep', `{"input":{"a":${'['.repeat(30)}${']'.repeat(30)}}}`],
    ['an array just within the value limit', `{"input":{"a":[${'0,'.repeat(MAX_JSON_VALUES - 4)}0]}}`],
    ['a number of ten thousand digits, passed through', `{"input":{"n":${'7'.repeat(10_000)}}}`],
  ])('%s', async (_name, body) => {
    await postJson(harness, IMAGES, body);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('compressed bodies: 415 unsupported_media_type, never inflated', () => {
  const json = Buffer.from('{"samples":1}');
  test.each([
    ['gzip', gzipSync(json)],
    ['x-gzip', gzipSync(json)],
    ['deflate', deflateSync(json)],
    ['br', brotliCompressSync(json)],
    ['gzip, identity', gzipSync(json)],
    // A body that claims a coding it does not use is refused all the same.
    ['gzip', json],
  ])('Content-Encoding: %s', async (encoding, body) => {
    const answer = await postJson(harness, IMAGES, new Uint8Array(body), {
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    expectRefused(harness, answer, errorBody(415, 'unsupported_media_type', COMPRESSED));
  });

  test('Content-Encoding: identity is no compression', async () => {
    const body = '{"samples":1}';
    await postJson(harness, IMAGES, body, {
      'content-type': 'application/json',
      'content-encoding': 'identity',
    });
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('other charsets: 415 unsupported_media_type', () => {
  test.each([
    'application/json; charset=latin1',
    'application/json; charset=iso-8859-1',
    'application/json; charset=utf-16',
    'application/json; charset="utf-16le"',
    'application/json; charset=utf8',
    'application/json; charset=utf-8; charset=latin1',
    'application/json; charset=utf-8; charset=utf-8',
  ])('%s', async (contentType) => {
    const answer = await postJson(harness, IMAGES, '{"samples":1}', { 'content-type': contentType });
    expectRefused(harness, answer, errorBody(415, 'unsupported_media_type', NOT_UTF8_MEDIA));
  });

  test.each(['application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json'])(
    '%s is accepted',
    async (contentType) => {
      const body = '{"samples":1}';
      await postJson(harness, IMAGES, body, { 'content-type': contentType });
      expectForwardedVerbatim(harness, IMAGES, body);
    },
  );
});

describe('bytes that are not UTF-8 JSON: 400 invalid_json', () => {
  test.each([
    ['a byte-order mark', [0xef, 0xbb, 0xbf, ...Buffer.from('{"samples":1}')]],
    ['a lone continuation byte', [...Buffer.from('{"scheduler":"'), 0x80, ...Buffer.from('"}')]],
    ['a sequence cut short at the end', [...Buffer.from('{"scheduler":"a"}'), 0xe2, 0x82]],
    ['an encoded surrogate half', [...Buffer.from('{"scheduler":"'), 0xed, 0xb0, 0x80, ...Buffer.from('"}')]],
    [
      'a code point past U+10FFFF',
      [...Buffer.from('{"scheduler":"'), 0xf4, 0x90, 0x80, 0x80, ...Buffer.from('"}')],
    ],
    ['a NUL before the body', [0x00, ...Buffer.from('{"samples":1}')]],
  ])('%s', async (_name, bytes) => {
    const answer = await postJson(harness, IMAGES, new Uint8Array(bytes));
    expectRefused(harness, answer, invalidJson(NOT_UTF8_JSON));
  });
});

describe('JSON that could be read two ways: 400 invalid_json', () => {
  const unique = 'appears more than once; member names must be unique';
  test.each([
    ['"a" and "\\u0061"', '{"input":{"a":1,"\\u0061":2}}', 'input.a'],
    ['upper- and lower-case escapes', '{"input":{"\\u00e9":1,"\\u00E9":2}}', 'input.é'],
    ['a raw and an escaped é', '{"input":{"é":1,"\\u00e9":2}}', 'input.é'],
    ['a surrogate pair and the raw emoji', '{"input":{"😀":1,"\\ud83d\\ude00":2}}', 'input.😀'],
    [
      'every letter escaped',
      '{"samples":1,"\\u0073\\u0061\\u006d\\u0070\\u006c\\u0065\\u0073":9}',
      'samples',
    ],
    ['deep in arrays of objects', '{"input":{"l":[[{"a":[{"k":1,"\\u006b":2}]}]]}}', 'input.l.0.0.a.0.k'],
  ])('%s', async (_name, body, param) => {
    const answer = await postJson(harness, IMAGES, body);
    expectRefused(harness, answer, invalidJson(`the member at param ${unique}`, param));
  });

  // Another reader of the same body could treat them as a prototype rather than a member.
  const reserved = 'is a reserved member name (__proto__ and constructor are not accepted)';
  test.each([
    ['__proto__ twice', '{"input":{"__proto__":{},"__proto__":{"x":1}}}', 'input.__proto__'],
    ['constructor escaped', '{"\\u0063onstructor":2}', 'constructor'],
    ['__proto__ deep in arrays', '{"input":{"l":[[{"__proto__":{"polluted":1}}]]}}', 'input.l.0.0.__proto__'],
  ])('%s: a reserved name', async (_name, body, param) => {
    const answer = await postJson(harness, IMAGES, body);
    expectRefused(harness, answer, invalidJson(`the member at param ${reserved}`, param));
  });

  test('the gateway still serves', expectStillServing);
});

describe('one hostile body costs about what a plain body of its size costs', () => {
  // Round trips through the gateway, best of several, against the plain body of the same size measured
  // in the same test. The accepted shapes also reach the simulator, which parses them in this process;
  // the number of a million digits is left out because the simulator reads integers as BigInts (the
  // gateway's own time for it is in `npm run bench:stall`).
  const ROUNDS = 5;
  const GENEROUS_RATIO = 10;

  async function roundTripMs(body: string): Promise<number> {
    const started = performance.now();
    await postJson(harness, IMAGES, body);
    return performance.now() - started;
  }

  test.each(
    HOSTILE_SHAPES.filter((shape) => shape.id !== 'huge-number-passed').map((shape) => [shape.label, shape]),
  )('%s, 1 MiB', async (_label, shape) => {
    const plain = PLAIN_SHAPE.build(MEBIBYTE);
    const hostile = shape.build(MEBIBYTE);
    // One untimed exchange each, then alternating rounds, so that load from elsewhere on the machine
    // touches both alike; the best round of each is compared.
    await roundTripMs(plain);
    await roundTripMs(hostile);
    let plainMs = Number.POSITIVE_INFINITY;
    let hostileMs = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round += 1) {
      plainMs = Math.min(plainMs, await roundTripMs(plain));
      hostileMs = Math.min(hostileMs, await roundTripMs(hostile));
    }
    expect(hostileMs).toBeLessThan(GENEROUS_RATIO * plainMs);
    await expectStillServing();
  });
});

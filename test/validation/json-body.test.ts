// Contract section 5: one strict, lossless parse. Bodies the gateway and the upstream could read two
// ways (duplicate names, odd encodings, prototype tricks) are refused with 400 invalid_json before
// anything is forwarded; an accepted body reaches the upstream byte for byte.
import { describe, expect, test } from 'vitest';
import { parseJsonLossless } from '../../src/json/lossless.ts';
import { parseJsonBody } from '../../src/validation/json-body.ts';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import {
  GENEROUS_UPSTREAM_REQUESTS_PER_MINUTE,
  IMAGES,
  VIDEOS,
  errorBody,
  expectForwardedVerbatim,
  expectRefused,
  postJson,
} from './validation-client.ts';

const harness = useGatewayHarness({ simulatorRequestsPerMinute: GENEROUS_UPSTREAM_REQUESTS_PER_MINUTE });

const NOT_UTF8_JSON = 'the request body is not valid UTF-8 JSON';

function invalidJson(message: string, param?: string) {
  return errorBody(400, 'invalid_json', message, param === undefined ? {} : { param });
}

async function expectInvalidJson(body: string | Uint8Array, message: string, param?: string, path = IMAGES) {
  expectRefused(harness, await postJson(harness, path, body), invalidJson(message, param));
}

describe('malformed bodies: 400 invalid_json', () => {
  test.each([
    ['broken JSON', '{"samples":', NOT_UTF8_JSON],
    ['a trailing comma', '{"samples":1,}', NOT_UTF8_JSON],
    ['single quotes', "{'samples':1}", NOT_UTF8_JSON],
    ['a comment', '{"samples":1 /* two */}', NOT_UTF8_JSON],
    ['NaN', '{"CFGScale":NaN}', NOT_UTF8_JSON],
    ['a raw control character in a string', '{"scheduler":"a\u0001b"}', NOT_UTF8_JSON],
    ['a byte-order mark', '\ufeff{}', NOT_UTF8_JSON],
    ['trailing garbage', '{} x', NOT_UTF8_JSON],
    ['a second document', '{}{}', NOT_UTF8_JSON],
    ['an empty body', '', 'the request body is empty; send a JSON object'],
    ['a JSON array', '[{}]', 'the request body must be a JSON object'],
    ['a JSON string', '"{}"', 'the request body must be a JSON object'],
    ['a number', '1', 'the request body must be a JSON object'],
    ['a big integer', '12345678901234567890', 'the request body must be a JSON object'],
    ['null', 'null', 'the request body must be a JSON object'],
  ])('%s', async (_name, body, message) => {
    await expectInvalidJson(body, message);
  });

  test.each([
    ['a broken two-byte sequence', [0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]],
    ['an overlong encoding of "/"', [0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]],
    ['an encoded surrogate', [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]],
    [
      'a Latin-1 é in a prompt',
      [...Buffer.from('{"input":{"positivePrompt":"caf'), 0xe9, ...Buffer.from('"}}')],
    ],
    ['a UTF-16 body', [...Buffer.from('{}', 'utf16le')]],
  ])('invalid UTF-8: %s', async (_name, bytes) => {
    await expectInvalidJson(new Uint8Array(bytes), NOT_UTF8_JSON);
  });
});

describe('duplicate member names, at any depth and however spelt: 400 invalid_json', () => {
  const unique = 'appears more than once; member names must be unique';
  test.each([
    ['top level', '{"samples":1,"samples":25}', 'samples'],
    ['top level, spelt with an escape', '{"samples":1,"\\u0073amples":25}', 'samples'],
    ['top level, both escaped differently', '{"\\u0073amples":1,"sampl\\u0065s":25}', 'samples'],
    ['null then a value', '{"safetyLevel":null,"safetyLevel":"low"}', 'safetyLevel'],
    ['a big integer then a small one', '{"seed":12345678901234567890,"seed":1}', 'seed'],
    ['nested', '{"input":{"positivePrompt":"a","positivePrompt":"b"}}', 'input.positivePrompt'],
    [
      'nested, escaped',
      '{"input":{"positivePrompt":"a","positive\\u0050rompt":"b"}}',
      'input.positivePrompt',
    ],
    ['escaped solidus', '{"input":{"a/b":1,"a\\/b":2}}', 'input.a/b'],
    ['two levels down', '{"dimensions":{"outpaint":{"top":1,"top":2}}}', 'dimensions.outpaint.top'],
    [
      'in an unknown member passed through',
      '{"advancedFeatures":{"x":{"y":1,"y":2}}}',
      'advancedFeatures.x.y',
    ],
    ['inside an array', '{"input":{"loras":[{"id":"a"},{"id":"b","id":"c"}]}}', 'input.loras.1.id'],
  ])('%s', async (_name, body, param) => {
    await expectInvalidJson(body, `${param} ${unique}`, param);
  });

  test('a duplicate in a video body too', async () => {
    await expectInvalidJson('{"duration":5,"duration":60}', `duration ${unique}`, 'duration', VIDEOS);
  });

  test('the same name in different objects, and names inside string values, are fine', async () => {
    const body =
      '{"input":{"positivePrompt":"\\"samples\\": 1, \\"samples\\": 2 {[","negativePrompt":"\\\\"},"samples":2,"dimensions":{"outpaint":{"samples":1}}}';
    const answer = await postJson(harness, IMAGES, body);
    expect(answer.status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });

  test('names that differ only in case or by a trailing space are different names', async () => {
    const body = '{"input":{"style":"a","Style":"b","style ":"c"}}';
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });

  test('a syntax error is reported as such even when a duplicate comes first', async () => {
    await expectInvalidJson('{"samples":1,"samples":2', NOT_UTF8_JSON);
  });
});

describe('__proto__ and constructor cannot pollute anything: refused at any depth', () => {
  const reserved = 'is a reserved member name (__proto__ and constructor are not accepted)';
  const prototypeNamesBefore = Object.getOwnPropertyNames(Object.prototype);

  test.each([
    ['__proto__ at the top', '{"__proto__":{"polluted":true}}', '__proto__'],
    ['__proto__ escaped', '{"\\u005f_proto__":{"polluted":true}}', '__proto__'],
    ['__proto__ in input', '{"input":{"__proto__":{"polluted":true}}}', 'input.__proto__'],
    [
      '__proto__ deep',
      '{"advancedFeatures":{"a":[{"__proto__":{"polluted":true}}]}}',
      'advancedFeatures.a.0.__proto__',
    ],
    ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}', 'constructor'],
    [
      'constructor in dimensions',
      '{"dimensions":{"constructor":{"prototype":{"polluted":true}}}}',
      'dimensions.constructor',
    ],
  ])('%s', async (_name, body, param) => {
    await expectInvalidJson(body, `${param} ${reserved}`, param);
  });

  test('Object.prototype is untouched afterwards', () => {
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(prototypeNamesBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('a prompt that merely mentions them is fine', async () => {
    const body = '{"input":{"positivePrompt":"__proto__ constructor"}}';
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('nesting depth: at most 32 levels', () => {
  // The body object is level 1; input is 2; the arrays fill the rest.
  function nestedBody(levels: number): string {
    const arrays = levels - 2;
    return `{"input":{"deep":${'['.repeat(arrays)}${']'.repeat(arrays)}}}`;
  }

  test('32 levels reach the upstream', async () => {
    const body = nestedBody(32);
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });

  test.each([33, 100_000])('%i levels: 400 invalid_json', async (levels) => {
    await expectInvalidJson(nestedBody(levels), 'the request body nests deeper than 32 levels');
  });

  test('brackets inside strings do not count', async () => {
    const body = `{"input":{"positivePrompt":"${'['.repeat(100)}"}}`;
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

describe('integers that are not safe integers keep every digit, wherever they sit', () => {
  function parsed(text: string): Record<string, unknown> {
    return parseJsonBody(Buffer.from(text)).value;
  }

  test.each([
    ['2^53 - 1 stays a number', '{"n":9007199254740991}', { n: 9007199254740991 }],
    ['2^53 becomes a bigint', '{"n":9007199254740992}', { n: 9007199254740992n }],
    ['2^53 + 1 keeps its last digit', '{"n":9007199254740993}', { n: 9007199254740993n }],
    ['-(2^53 - 1) stays a number', '{"n":-9007199254740991}', { n: -9007199254740991 }],
    ['-(2^53 + 1) keeps its last digit', '{"n":-9007199254740993}', { n: -9007199254740993n }],
    ['a 40-digit integer', `{"n":${'9'.repeat(40)}}`, { n: 10n ** 40n - 1n }],
    [
      'several at the top level, around other members',
      '{"a":1,"seed":9223372036854775807,"b":"x","c":-9223372036854775809,"d":2.5}',
      { a: 1, seed: 9223372036854775807n, b: 'x', c: -9223372036854775809n, d: 2.5 },
    ],
    [
      'nested in objects',
      '{"a":{"b":{"c":12345678901234567890}},"d":12345678901234567891}',
      { a: { b: { c: 12345678901234567890n } }, d: 12345678901234567891n },
    ],
    [
      'in arrays, nested arrays and after a closed container',
      '{"list":[1,12345678901234567890,[2,[]],[3,-98765432109876543210],{},12345678901234567891]}',
      {
        list: [1, 12345678901234567890n, [2, []], [3, -98765432109876543210n], {}, 12345678901234567891n],
      },
    ],
    [
      'in arrays of objects',
      '{"loras":[{"id":"a","seed":1},{"id":"b","seed":18446744073709551615},[{"x":18446744073709551616}]]}',
      {
        loras: [
          { id: 'a', seed: 1 },
          { id: 'b', seed: 18446744073709551615n },
          [{ x: 18446744073709551616n }],
        ],
      },
    ],
    [
      'with spaces, tabs and newlines between the tokens',
      '{ "a" :\n[ 12345678901234567890 ,\t{ "b" : -12345678901234567890 } ] }',
      { a: [12345678901234567890n, { b: -12345678901234567890n }] },
    ],
    [
      'under member names that contain dots',
      '{"a.b":{"c":12345678901234567890},"a":{"b":{"c":1}}}',
      { 'a.b': { c: 12345678901234567890n }, a: { b: { c: 1 } } },
    ],
    [
      'under member names spelt with escapes',
      '{"\\u0073eed":12345678901234567890,"q\\"t":{"b\\\\":12345678901234567891},"":12345678901234567892}',
      { seed: 12345678901234567890n, 'q"t': { 'b\\': 12345678901234567891n }, '': 12345678901234567892n },
    ],
    [
      'digits inside strings stay strings, names included',
      '{"s":"12345678901234567890","t":"[12345678901234567890,{\\"u\\":1}]","12345678901234567890":1}',
      { s: '12345678901234567890', t: '[12345678901234567890,{"u":1}]', '12345678901234567890': 1 },
    ],
    [
      'decimals stay doubles, however many digits',
      '{"a":12345678901234567890.0,"b":0.12345678901234567890123,"c":9007199254740993.5,"d":-1.0}',
      {
        a: Number('12345678901234567890.0'),
        b: Number('0.12345678901234567890123'),
        c: Number('9007199254740993.5'),
        d: -1,
      },
    ],
    [
      'exponents stay doubles, their digits included',
      '{"a":1e20,"b":12345678901234567890E0,"c":1e-12345678901234567890,"d":2E+12345678901234567890}',
      { a: 1e20, b: Number('12345678901234567890E0'), c: 0, d: Infinity },
    ],
  ])('%s', (_name, text, expected) => {
    expect(parsed(text)).toStrictEqual(expected);
    // The simulator parses with a reviver instead; both must read every body the same way.
    expect(parsed(text)).toStrictEqual(parseJsonLossless(text));
  });

  test('the seed of a real submission', () => {
    const text =
      '{"model":"vendor@studio-xl","input":{"positivePrompt":"a lighthouse","negativePrompt":"blurry"},' +
      '"samples":1,"CFGScale":7.5,"steps":25,"seed":9223372036854775807,"dimensions":{"width":1024}}';
    expect(parsed(text)).toStrictEqual({ ...JSON.parse(text), seed: 9223372036854775807n });
  });
});

describe('what is forwarded is what was sent', () => {
  test('spacing, member order, escapes and number spellings survive: nothing is re-serialised', async () => {
    const body =
      '{ "samples" : 2.0 ,\n\t"input":{"positivePrompt":"caf\\u00e9 \\ud83e\\udd8a \u00e9"}, "CFGScale": 5e0, "seed":9223372036854775807 }';
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });

  test('a lone surrogate escape is valid JSON and passes as sent', async () => {
    const body = '{"input":{"positivePrompt":"\\ud83e"}}';
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });
});

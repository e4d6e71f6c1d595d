// docs/validation.md#the-json-parse-400-invalid_json: one strict, lossless parse. Bodies the gateway and the upstream could read two
// ways (duplicate names, odd encodings, prototype tricks) are refused with 400 invalid_json before
// anything is forwarded; an accepted body reaches the upstream byte for byte.
import { describe, expect, test } from 'vitest';
import { parseJsonBody } from '../../src/validation/json-body.ts';
import {
  IMAGES,
  NOT_UTF8_JSON,
  VIDEOS,
  expectForwardedVerbatim,
  expectRefused,
  invalidJson,
  postJson,
  useValidationGateway,
} from './validation-client.ts';

const harness = useValidationGateway();

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
    await expectInvalidJson(body, `the member at param ${unique}`, param);
  });

  test('a duplicate in a video body too', async () => {
    await expectInvalidJson(
      '{"duration":5,"duration":60}',
      `the member at param ${unique}`,
      'duration',
      VIDEOS,
    );
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
    await expectInvalidJson(body, `the member at param ${reserved}`, param);
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

describe('the parse: doubles for reading, the source text of every number a schema judges', () => {
  test.each([
    ['an integer of 15 digits needs no text', '{"n":-999999999999999}', {}],
    ['2^53 + 1', '{"n":9007199254740993}', { n: '9007199254740993' }],
    [
      'fractions, exponents and -0',
      '{"a":20.0,"b":1e400,"c":-1e-400,"d":-0}',
      { a: '20.0', b: '1e400', c: '-1e-400' },
    ],
    ['a 40-digit integer', `{"n":${'9'.repeat(40)}}`, { n: '9'.repeat(40) }],
    ['with spaces around', '{ "n" :\n 1.50 , "m": 2E+3 }', { n: '1.50', m: '2E+3' }],
    [
      'under a name spelt with escapes',
      '{"\\u0073eed":12345678901234567890}',
      { seed: '12345678901234567890' },
    ],
  ])('%s', (_name, text, texts) => {
    const body = parseJsonBody(Buffer.from(text));
    expect(body.value).toStrictEqual(JSON.parse(text));
    for (const [name, written] of Object.entries(texts))
      expect(body.numbers.textOf(body.value, name)).toBe(written);
    expect(body.numbers.textOf(body.value, 'n')).toBe((texts as Record<string, string>).n);
  });

  test('texts are kept down to dimensions.outpaint, nowhere in arrays or deeper', () => {
    const text =
      '{"dimensions":{"width":640.0,"outpaint":{"top":1e0,"deeper":{"x":1.5}}},"list":[1.5],"input":{"s":2.5}}';
    const body = parseJsonBody(Buffer.from(text));
    const dimensions = body.value.dimensions as Record<string, Record<string, unknown>>;
    expect(body.numbers.textOf(dimensions, 'width')).toBe('640.0');
    expect(body.numbers.textOf(dimensions.outpaint, 'top')).toBe('1e0');
    expect(body.numbers.textOf(dimensions.outpaint!.deeper, 'x')).toBeUndefined();
    expect(body.numbers.textOf(body.value.list, 0)).toBeUndefined();
    expect(body.numbers.textOf(body.value.input, 's')).toBe('2.5');
  });
});

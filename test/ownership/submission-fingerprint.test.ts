// The fingerprint two creates with one requestId are compared on: the canonical parsed body and the
// route, numbers by exact value, strings by their code units.
import { describe, expect, test } from 'vitest';
import { submissionFingerprint } from '../../src/ownership/submission-fingerprint.ts';
import { parseJsonBody } from '../../src/validation/json-body.ts';

const print = (text: string, route: 'images.create' | 'videos.create' = 'images.create') =>
  submissionFingerprint(route, parseJsonBody(Buffer.from(text)));

describe('the same submission', () => {
  test.each([
    ['spacing', '{"samples":1}', '{ "samples" : 1 }\n'],
    ['member order, at every depth', '{"a":{"x":1,"y":2},"b":3}', '{"b":3,"a":{"y":2,"x":1}}'],
    ['escapes', '{"p":"fox é"}', '{"p":"f\\u006fx \\u00e9"}'],
    ['one number spelt otherwise', '{"n":[20,0.5,0,-3]}', '{"n":[2e1,5E-1,-0.0,-3.000]}'],
    [
      'one number spelt otherwise, in objects',
      '{"n":20,"a":{"x":0.5,"y":0,"z":-3}}',
      '{"n":2e1,"a":{"x":5E-1,"y":-0.0,"z":-3.000}}',
    ],
    ['one number spelt otherwise, deep', '{"a":{"b":{"c":{"n":0.5}}}}', '{"a":{"b":{"c":{"n":5e-1}}}}'],
    [
      'a number beyond a double, spelt otherwise',
      '{"seed":9223372036854775807}',
      '{"seed":9.223372036854775807e18}',
    ],
    ['the requestId, which is the key', '{"requestId":"a","samples":1}', '{"samples":1,"requestId":"A"}'],
  ])('%s', (_name, first, second) => {
    expect(print(second)).toBe(print(first));
  });
});

describe('another submission', () => {
  test.each([
    ['another value', '{"samples":1}', '{"samples":2}'],
    ['numbers a double cannot tell apart', '{"seed":9223372036854775807}', '{"seed":9223372036854775806}'],
    [
      'numbers a double cannot tell apart, in an array',
      '{"n":[9223372036854775807]}',
      '{"n":[9223372036854775806]}',
    ],
    [
      'numbers a double cannot tell apart, deep',
      '{"a":{"b":{"c":{"n":0.1}}}}',
      '{"a":{"b":{"c":{"n":0.10000000000000000001}}}}',
    ],
    ['a short integer and a decimal', '{"a":{"n":1}}', '{"a":{"n":1.5}}'],
    ['a number and its text', '{"n":1}', '{"n":"1"}'],
    ['null and an absent member', '{"n":null}', '{}'],
    ['a lone surrogate and the replacement character', '{"p":"\\ud800"}', '{"p":"\\ufffd"}'],
    ['a string and its JSON text', '{"p":"\\ud800"}', '{"p":"\\"\\\\ud800\\""}'],
    ['members moved between objects', '{"a":{"x":1},"b":{}}', '{"a":{},"b":{"x":1}}'],
    ['an array in another order', '{"n":[1,2]}', '{"n":[2,1]}'],
  ])('%s', (_name, first, second) => {
    expect(print(second)).not.toBe(print(first));
  });

  test('the same body on another route', () => {
    expect(print('{"duration":5}', 'videos.create')).not.toBe(print('{"duration":5}'));
  });
});

// The body's first parse is read as it is when it kept the text of every number a double may not hold;
// otherwise the body is parsed again. Both readings give one fingerprint.
describe('the parse read as it is, and the body parsed again', () => {
  test.each([
    ['the benchmark submission', '{"model":"m","CFGScale":7.5,"seed":9223372036854775807,"samples":1}'],
    ['numbers in nested objects', '{"a":{"x":0.1,"y":{"z":1e400}},"b":-0,"c":-0.0}'],
    ['short integers in arrays', '{"n":[1,-2,300000000000000],"m":[[0]]}'],
    ['a requestId', '{"requestId":"2f0c8a52-6b1d-4e2a-9c47-5d8e1f2a7b90","a":{"requestId":1.5}}'],
  ])('%s', (_name, text) => {
    const body = parseJsonBody(Buffer.from(text));
    expect(body.everyInexactNumberKept).toBe(true);
    expect(submissionFingerprint('images.create', body)).toBe(
      submissionFingerprint('images.create', { ...body, everyInexactNumberKept: false }),
    );
  });
});

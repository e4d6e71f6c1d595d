// The fingerprint two creates with one requestId are compared on: the canonical parsed body and the
// route, numbers by exact value, strings by their code units.
import { describe, expect, test } from 'vitest';
import { submissionFingerprint } from '../../src/ownership/submission-fingerprint.ts';

const print = (text: string, route: 'images.create' | 'videos.create' = 'images.create') =>
  submissionFingerprint(route, Buffer.from(text));

describe('the same submission', () => {
  test.each([
    ['spacing', '{"samples":1}', '{ "samples" : 1 }\n'],
    ['member order, at every depth', '{"a":{"x":1,"y":2},"b":3}', '{"b":3,"a":{"y":2,"x":1}}'],
    ['escapes', '{"p":"fox é"}', '{"p":"f\\u006fx \\u00e9"}'],
    ['one number spelt otherwise', '{"n":[20,0.5,0,-3]}', '{"n":[2e1,5E-1,-0.0,-3.000]}'],
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

// Lossless JSON: a seed of 19 digits must mean the same number after a parse and a stringify.
import { describe, expect, test } from 'vitest';
import { parseJsonLossless, stringifyJson } from '../../src/simulator/lossless-json.ts';

describe('parseJsonLossless', () => {
  test.each([
    ['2^53 - 1 stays a number', '9007199254740991', 9007199254740991],
    ['-(2^53 - 1) stays a number', '-9007199254740991', -9007199254740991],
    ['2^53 becomes a bigint', '9007199254740992', 9007199254740992n],
    ['2^53 + 1 keeps its last digit', '9007199254740993', 9007199254740993n],
    ['2^63 - 1 keeps every digit', '9223372036854775807', 9223372036854775807n],
    ['2^63 keeps every digit', '9223372036854775808', 9223372036854775808n],
    ['a large negative integer', '-9223372036854775809', -9223372036854775809n],
    ['a decimal is untouched', '0.1', 0.1],
    [
      'a large decimal is untouched (rounded as a double)',
      '9007199254740993.5',
      Number('9007199254740993.5'),
    ],
    ['an exponent is untouched', '1e30', 1e30],
  ])('%s', (_name, text, expected) => {
    expect(parseJsonLossless(text)).toBe(expected);
  });

  test('nested values, duplicate keys (last wins) and strings of digits', () => {
    expect(
      parseJsonLossless('{"a":[9223372036854775807,{"b":1.5}],"s":"9223372036854775807","a2":1,"a2":2}'),
    ).toEqual({
      a: [9223372036854775807n, { b: 1.5 }],
      s: '9223372036854775807',
      a2: 2,
    });
  });

  test('invalid JSON still throws', () => {
    expect(() => parseJsonLossless('{"a":')).toThrow(SyntaxError);
  });
});

describe('stringifyJson', () => {
  test.each(['9007199254740992', '9007199254740993', '9223372036854775807', '-9223372036854775809'])(
    '%s round-trips exactly',
    (digits) => {
      const text = `{"seed":${digits},"cfg":7.25,"list":[${digits}]}`;
      expect(stringifyJson(parseJsonLossless(text))).toBe(text);
    },
  );

  test('ordinary values are written as JSON.stringify writes them', () => {
    const value = { a: 1, b: 'x', c: null, d: [true, 0.1], e: undefined };
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
  });
});

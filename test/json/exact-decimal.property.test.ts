// The exact judgement of numbers (docs/validation.md#exact-numbers) against exact arithmetic: every generated decimal
// text is read both by parseExactDecimal and, in this test only, as a fraction of BigInts.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { compareDecimals, isWholeDecimal, parseExactDecimal } from '../../src/json/exact-decimal.ts';

/** A JSON number text: sign, integer part without leading zeros, optional fraction and exponent. */
const jsonNumberText = fc
  .record({
    negative: fc.boolean(),
    integer: fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9]\d{0,25}$/)),
    fraction: fc.option(fc.stringMatching(/^\d{1,25}$/), { nil: undefined }),
    exponent: fc.option(
      fc.record({
        mark: fc.constantFrom('e', 'E'),
        sign: fc.constantFrom('', '+', '-'),
        digits: fc.stringMatching(/^\d{1,2}$/),
      }),
      { nil: undefined },
    ),
  })
  .map(
    ({ negative, integer, fraction, exponent }) =>
      `${negative ? '-' : ''}${integer}${fraction === undefined ? '' : `.${fraction}`}` +
      (exponent === undefined ? '' : `${exponent.mark}${exponent.sign}${exponent.digits}`),
  );

/** The exact value as numerator / 10^scale, by BigInt arithmetic. */
function reference(text: string): { numerator: bigint; scale: bigint } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (match === null) throw new Error(`not a JSON number: ${text}`);
  const [, sign, integer, fraction = '', exponent = '0'] = match;
  let numerator = BigInt(`${sign}${integer}${fraction}`);
  let scale = BigInt(fraction.length) - BigInt(exponent);
  if (scale < 0n) {
    numerator *= 10n ** -scale;
    scale = 0n;
  }
  return { numerator, scale };
}

function referenceCompare(a: string, b: string): number {
  const x = reference(a);
  const y = reference(b);
  const scale = x.scale > y.scale ? x.scale : y.scale;
  const left = x.numerator * 10n ** (scale - x.scale);
  const right = y.numerator * 10n ** (scale - y.scale);
  return left < right ? -1 : left > right ? 1 : 0;
}

function referenceIsWhole(text: string): boolean {
  const { numerator, scale } = reference(text);
  return numerator % 10n ** scale === 0n;
}

describe('exact decimal judgement against BigInt arithmetic', () => {
  test('integer or not', () => {
    fc.assert(
      fc.property(jsonNumberText, (text) => {
        expect(isWholeDecimal(parseExactDecimal(text))).toBe(referenceIsWhole(text));
      }),
      { numRuns: 2_000 },
    );
  });

  test('comparison of any two numbers', () => {
    fc.assert(
      fc.property(jsonNumberText, jsonNumberText, (a, b) => {
        expect(compareDecimals(parseExactDecimal(a), parseExactDecimal(b))).toBe(referenceCompare(a, b));
      }),
      { numRuns: 2_000 },
    );
  });

  test('comparison against the seed bounds, near them', () => {
    const nearBound = fc
      .tuple(
        fc.constantFrom('9223372036854775807', '9223372036854775808', '0'),
        fc.constantFrom('', '.0', '.0000000000000000001', 'e0', '0e-1'),
      )
      .map(([digits, tail]) => `${digits}${tail}`);
    fc.assert(
      fc.property(fc.oneof(nearBound, jsonNumberText), (text) => {
        const value = parseExactDecimal(text);
        for (const bound of ['0', '9223372036854775807']) {
          expect(compareDecimals(value, parseExactDecimal(bound))).toBe(referenceCompare(text, bound));
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

describe('the cases the contract names', () => {
  test.each([
    ['4.0000000000000001', false],
    ['2.0000000000000001', false],
    ['1234567890123456789.0', true],
    ['1e3', true],
    ['1E+3', true],
    ['-0.0', true],
    ['1e400', true],
    ['1e-400', false],
    ['0.5e1', true],
    ['12.5e-1', false],
  ])('%s is an integer: %s', (text, whole) => {
    expect(isWholeDecimal(parseExactDecimal(text))).toBe(whole);
  });

  test.each([
    ['-1e-400', '0', -1],
    ['9223372036854775808', '9223372036854775807', 1],
    ['9.223372036854775807e18', '9223372036854775807', 0],
    ['92233720368547758070e-1', '9223372036854775807', 0],
    ['-0', '0', 0],
    ['1e1000000000000000000000', '9223372036854775807', 1],
    ['-1e1000000000000000000000', '0', -1],
    ['1e-1000000000000000000000', '0', 1],
  ])('%s against %s: %i', (text, bound, expected) => {
    expect(compareDecimals(parseExactDecimal(text), parseExactDecimal(bound))).toBe(expected);
  });

  test('an exponent of a million digits is read in one pass, clamped without changing the verdict', () => {
    const text = `1e${'9'.repeat(1_000_000)}`;
    expect(isWholeDecimal(parseExactDecimal(text))).toBe(true);
    expect(compareDecimals(parseExactDecimal(text), parseExactDecimal('9223372036854775807'))).toBe(1);
    expect(isWholeDecimal(parseExactDecimal(`1e-${'9'.repeat(1_000_000)}`))).toBe(false);
  });
});

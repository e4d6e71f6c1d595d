// The exact value of a JSON number, read from its text in one pass. A double rounds (4.0000000000000001
// becomes 4, 1e400 becomes Infinity) and a BigInt of a huge literal costs time quadratic in its digits;
// this reads sign, significant digits and the position of the decimal point and nothing else, so judging
// a number of any length costs time linear in its text.

import { DIGIT_ZERO, MINUS, PLUS } from './char-codes.ts';

/**
 * A decimal `±0.d1d2…dk × 10^order` with d1 ≠ 0 and dk ≠ 0; zero has no digits. Two numbers that mean
 * the same value (`20`, `20.0`, `2e1`, `0.2E+2`) have equal decimals.
 */
export interface ExactDecimal {
  negative: boolean;
  /** The significant digits, without leading or trailing zeros; empty for zero. */
  digits: string;
  /** Where the decimal point sits relative to the first significant digit. */
  order: number;
}

/**
 * Exponents are clamped to this magnitude. No text the gateway reads has this many digits, so a number
 * whose exponent exceeds it is beyond every bound either way, and clamping changes no verdict.
 */
const MAX_ORDER = 1e15;

/** The exponent's value, clamped to ±MAX_ORDER, from the digits between `start` and `end`. */
function exponentValue(text: string, start: number, end: number): number {
  let position = start;
  let negative = false;
  if (text.charCodeAt(position) === MINUS || text.charCodeAt(position) === PLUS) {
    negative = text.charCodeAt(position) === MINUS;
    position += 1;
  }
  let value = 0;
  for (; position < end && value <= MAX_ORDER; position += 1) {
    value = value * 10 + (text.charCodeAt(position) - DIGIT_ZERO);
  }
  const clamped = Math.min(value, MAX_ORDER);
  return negative ? -clamped : clamped;
}

function clampOrder(order: number): number {
  return Math.max(-MAX_ORDER, Math.min(MAX_ORDER, order));
}

/**
 * The exact value of a number written in JSON's grammar (`-?int(.frac)?([eE][+-]?digits)?`; a leading
 * `+` and a bare `.5` are read too, so that bounds and generated texts need no special case). The text
 * must already be a valid number: JSON.parse has accepted the document it comes from.
 */
export function parseExactDecimal(text: string): ExactDecimal {
  let position = 0;
  const negative = text.charCodeAt(0) === MINUS;
  if (negative || text.charCodeAt(0) === PLUS) position = 1;
  // Native searches, not a loop over every digit: a number may be a million digits long.
  const lower = text.indexOf('e', position);
  const upper = text.indexOf('E', position);
  const exponentAt = lower === -1 ? (upper === -1 ? text.length : upper) : lower;
  const dotAt = text.indexOf('.', position);
  const integerEnd = dotAt === -1 || dotAt > exponentAt ? exponentAt : dotAt;
  const fraction = integerEnd === exponentAt ? '' : text.slice(integerEnd + 1, exponentAt);
  const integer = text.slice(position, integerEnd);
  const exponent = exponentAt === text.length ? 0 : exponentValue(text, exponentAt + 1, text.length);

  // The significant digits run from the first non-zero digit to the last non-zero digit; both loops stop
  // at the first non-zero digit they meet.
  const all = integer + fraction;
  let first = 0;
  while (first < all.length && all.charCodeAt(first) === DIGIT_ZERO) first += 1;
  if (first === all.length) return { negative: false, digits: '', order: 0 };
  let last = all.length;
  while (all.charCodeAt(last - 1) === DIGIT_ZERO) last -= 1;
  return {
    negative,
    digits: all.slice(first, last),
    order: clampOrder(integer.length - first + exponent),
  };
}

/** Whether the value is a whole number: every significant digit sits before the decimal point. */
export function isWholeDecimal(value: ExactDecimal): boolean {
  return value.digits.length <= value.order || value.digits === '';
}

function compareMagnitudes(a: ExactDecimal, b: ExactDecimal): number {
  if (a.digits === '' || b.digits === '') return a.digits === b.digits ? 0 : a.digits === '' ? -1 : 1;
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  // Same order: digit by digit; a shorter significand is a prefix followed by zeros, so it is smaller.
  const length = Math.min(a.digits.length, b.digits.length);
  for (let index = 0; index < length; index += 1) {
    const difference = a.digits.charCodeAt(index) - b.digits.charCodeAt(index);
    if (difference !== 0) return difference < 0 ? -1 : 1;
  }
  return Math.sign(a.digits.length - b.digits.length);
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`, exactly. */
export function compareDecimals(a: ExactDecimal, b: ExactDecimal): number {
  const signA = a.digits === '' ? 0 : a.negative ? -1 : 1;
  const signB = b.digits === '' ? 0 : b.negative ? -1 : 1;
  if (signA !== signB) return signA < signB ? -1 : 1;
  const magnitude = compareMagnitudes(a, b);
  // Equal magnitudes are 0 whatever the sign (never -0).
  return signA < 0 && magnitude !== 0 ? -magnitude : magnitude;
}

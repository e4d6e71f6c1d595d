// JSON without the double's rounding: an integer literal beyond 2^53 keeps every digit as a bigint, and
// a bigint is written back with exactly those digits. Everything else behaves like JSON.parse/stringify.
const INTEGER_LITERAL = /^-?\d+$/;

function reviveExactIntegers(_key: string, value: unknown, context: JsonReviverContext): unknown {
  if (typeof value !== 'number' || Number.isSafeInteger(value)) return value;
  const source = context.source;
  return source !== undefined && INTEGER_LITERAL.test(source) ? BigInt(source) : value;
}

function writeBigintsExactly(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? JSON.rawJSON(String(value)) : value;
}

/**
 * `JSON.parse`, except that integers that are not safe integers become bigints with the exact digits.
 * The simulator's parse. The gateway never converts a client's number: a bigint of a huge literal costs
 * time quadratic in its digits, so its body parser (src/validation/json-body.ts) keeps each number's
 * source text instead and forwards the client's bytes.
 */
export function parseJsonLossless(text: string): unknown {
  return JSON.parse(text, reviveExactIntegers);
}

/** `JSON.stringify`, except that bigints are written as JSON numbers with every digit. */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, writeBigintsExactly);
}

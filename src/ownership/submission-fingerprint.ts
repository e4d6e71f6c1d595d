// What makes two creates with one requestId the same submission (docs/ownership.md, after the IETF
// Idempotency-Key draft): the same route and the same body as the client sent it, before the tenant's
// policy rewrote it (a policy changed by a reload does not make a repeat different), compared parsed:
// spacing, escapes and member order do not count, numbers are compared by their exact value (`20`,
// `20.0` and `2e1` are one number; 9223372036854775807 and 9223372036854775806 are two, though a double
// cannot tell them apart). The requestId itself is the key, not part of what it names.
import { createHash, type Hash } from 'node:crypto';
import type { RouteId } from '../config/route-ids.ts';
import { parseExactDecimal } from '../json/exact-decimal.ts';
import { NumberTexts } from '../json/number-texts.ts';
import type { JsonBody } from '../validation/json-body.ts';

/**
 * A number as its exact value, in one spelling: `i<integer>` for an integer of at most 15 digits (the
 * common case, read without a decimal), else `d<sign>0.<significant digits>e<order>`.
 */
class CanonicalNumber {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

// Written as an integer of at most 15 digits: its own text is its canonical one (but for "-0").
const PLAIN_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
const MAX_INTEGER_DIGITS = 15;

function canonicalNumber(source: string): CanonicalNumber {
  if (PLAIN_INTEGER.test(source)) return new CanonicalNumber(source === '-0' ? 'i0' : `i${source}`);
  const { negative, digits, order } = parseExactDecimal(source);
  if (digits === '') return new CanonicalNumber('i0');
  const sign = negative ? '-' : '';
  if (order >= digits.length && order <= MAX_INTEGER_DIGITS) {
    return new CanonicalNumber(`i${sign}${digits}${'0'.repeat(order - digits.length)}`);
  }
  return new CanonicalNumber(`d${sign}0.${digits}e${order}`);
}

function exactNumbers(_key: string, value: unknown, context: JsonReviverContext): unknown {
  return typeof value === 'number' ? canonicalNumber(context.source ?? String(value)) : value;
}

/** Text is gathered into pieces of about this many code units before each is hashed. */
const HASHED_PIECE_LENGTH = 65_536;

/**
 * Writes a value's canonical form into a hash: members sorted by name, numbers as above, each string as
 * its length and its text (no escaping to undo or get wrong). The hash reads UTF-8, which cannot carry
 * a lone surrogate (`"\ud800"` in JSON): such a string is written as JSON.stringify escapes it, marked.
 */
class CanonicalWriter {
  readonly #hash: Hash;
  /** The texts of the numbers whose double may not be their exact value, when read from a plain parse. */
  readonly #numbers: NumberTexts;
  #pending = '';

  constructor(hash: Hash, numbers: NumberTexts) {
    this.#hash = hash;
    this.#numbers = numbers;
  }

  /** `value`, which is `container[key]`; the top-level object's requestId is left out. */
  write(value: unknown, container?: object, key?: string): void {
    if (value instanceof CanonicalNumber) {
      this.#append(`n${value.text};`);
    } else if (typeof value === 'number') {
      // Without a kept text, the number was a short integer literal: its double is its exact value.
      const text = key === undefined ? undefined : this.#numbers.textOf(container, key);
      this.#append(`n${canonicalNumber(text ?? String(value)).text};`);
    } else if (typeof value === 'string') {
      this.#writeString(value);
    } else if (Array.isArray(value)) {
      this.#append('[');
      // No key: an array's numbers have no kept text (only objects' members do).
      for (const item of value as unknown[]) this.write(item, value);
      this.#append(']');
    } else if (typeof value === 'object' && value !== null) {
      const object = value as Record<string, unknown>;
      this.#append('{');
      for (const name of Object.keys(object).sort()) {
        if (container === undefined && name === 'requestId') continue;
        this.#writeString(name);
        this.write(object[name], object, name);
      }
      this.#append('}');
    } else {
      // true, false, null
      this.#append(`${String(value)};`);
    }
  }

  digest(): string {
    this.#flush();
    return this.#hash.digest('base64url');
  }

  #writeString(text: string): void {
    const written = text.isWellFormed() ? text : JSON.stringify(text);
    this.#append(`${written === text ? 's' : 'j'}${written.length}:`);
    this.#append(written);
  }

  #append(text: string): void {
    this.#pending += text;
    if (this.#pending.length >= HASHED_PIECE_LENGTH) this.#flush();
  }

  #flush(): void {
    this.#hash.update(this.#pending, 'utf8');
    this.#pending = '';
  }
}

/**
 * The fingerprint of a create: a hash of its route and its body's canonical form. `clientBody` is the
 * body as the client sent it, parsed once (src/validation/json-body.ts). Its parsed value is read as it
 * is when the parse kept the text of every number a double may not hold exactly (the common case: such
 * numbers sit in the top levels of objects); otherwise the body is parsed again with each number's
 * source text, which cannot fail (the first parse judged it a JSON object within the nesting and size
 * limits) and costs time linear in it.
 */
export function submissionFingerprint(route: RouteId, clientBody: JsonBody): string {
  const writer = new CanonicalWriter(
    createHash('sha256'),
    clientBody.everyInexactNumberKept ? clientBody.numbers : NumberTexts.none,
  );
  writer.write(route);
  writer.write(
    clientBody.everyInexactNumberKept
      ? clientBody.value
      : JSON.parse(clientBody.raw.toString('utf8'), exactNumbers),
  );
  return writer.digest();
}

// The source text of the numbers of a parsed body, beside the doubles JSON.parse made of them. Judging
// reads the text (src/json/exact-decimal.ts), so a value is never judged on what rounding made of it.
import { parseExactDecimal, type ExactDecimal } from './exact-decimal.ts';

/** The texts of one object's numeric members, by member name. */
export type MemberNumberTexts = ReadonlyMap<string, string>;

export class NumberTexts {
  static readonly none = new NumberTexts(new Map());

  readonly #byObject: ReadonlyMap<object, MemberNumberTexts>;

  constructor(byObject: ReadonlyMap<object, MemberNumberTexts>) {
    this.#byObject = byObject;
  }

  /** The text the client wrote for `container[key]`, when one was kept. */
  textOf(container: unknown, key: string | number): string | undefined {
    if (typeof container !== 'object' || container === null || typeof key !== 'string') return undefined;
    return this.#byObject.get(container)?.get(key);
  }

  /** The same texts after `from` was replaced by `to`, whose `rewritten` members no longer hold them. */
  withObjectReplaced(from: object, to: object, rewritten: readonly string[]): NumberTexts {
    const members = this.#byObject.get(from);
    if (members === undefined) return this;
    const kept = new Map(members);
    for (const name of rewritten) kept.delete(name);
    const byObject = new Map(this.#byObject);
    byObject.delete(from);
    byObject.set(to, kept);
    return new NumberTexts(byObject);
  }
}

/**
 * The exact value of `container[key]`: from the kept text when there is one; otherwise from the value,
 * which is then exact (a short integer literal, or a bigint the simulator's parse made). Undefined when
 * the value is no finite number.
 */
export function exactNumberAt(
  numbers: NumberTexts,
  container: unknown,
  key: string | number,
  value: unknown,
): ExactDecimal | undefined {
  const text = numbers.textOf(container, key);
  if (text !== undefined) return parseExactDecimal(text);
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isFinite(value))) {
    return parseExactDecimal(String(value));
  }
  return undefined;
}

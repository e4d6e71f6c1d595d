// One pass over a JSON text for what JSON.parse does not give: how deep the document nests, whether an
// object names a member twice (however its name is escaped), the source text of the numbers a schema may
// judge, and where each top-level member's value sits so that a rewrite can splice new values in and
// leave every other byte as sent. Only brackets, commas, colons, member names and numbers are read;
// anything this scanner skips over without looking is left to JSON.parse, which must accept the text
// before the scan's findings mean anything. Every step is constant work per character or per member
// (strings, whitespace and number tokens are crossed with native searches), so the scan is linear in the
// text whatever its shape.

import * as Char from '../json/char-codes.ts';

/** Deep enough for any real request (the service's own bodies nest 3 levels), far below stack limits. */
export const MAX_JSON_DEPTH = 32;

/**
 * Values (objects, arrays, strings, numbers, literals) a body may hold. A real submission holds a few
 * dozen. JSON.parse spends as long building one value as copying tens to hundreds of bytes of a prompt, so a
 * body of a million small values would hold the event loop many times longer than a plain body of the
 * same size: past this count the body is refused before it is parsed, which bounds what parsing,
 * validating and explaining any body can cost whatever its size (docs/validation.md has the figures).
 */
export const MAX_JSON_VALUES = 5_000;

/**
 * Number texts are kept for members of objects up to this depth, reached through objects only: the
 * request schemas judge numbers no deeper (`dimensions.outpaint.top` sits at depth 3), and nothing reads
 * the numbers elsewhere, which are forwarded byte for byte. Keeping none there keeps a body of a
 * million numbers from costing a million kept texts.
 */
export const NUMBER_TEXT_DEPTH = 3;

/** `too_deep` and `too_many_values` are reported as soon as seen, before the text is parsed. */
export type StructureProblem =
  | { kind: 'too_deep' }
  | { kind: 'too_many_values' }
  | { kind: 'duplicate_member' | 'reserved_member'; path: string };

/** An object whose numeric members' texts were kept, located by member names from the top. */
export interface ObjectNumberTexts {
  /** Member names from the top-level object to this one; empty for the top level. */
  path: readonly string[];
  /** Member name → the number exactly as written. */
  texts: Map<string, string>;
}

/** Where a top-level member's value sits: from just after its colon to its comma or closing brace. */
export interface ValueSpan {
  start: number;
  end: number;
}

/** The top-level object's members in text order, and where its closing brace is. */
export interface TopLevelLayout {
  members: Map<string, ValueSpan>;
  closingBrace: number;
}

/** A text with a problem has no reliable paths (a duplicate makes one ambiguous), so none are given. */
export type JsonStructure =
  | { problem: StructureProblem; numberTexts?: undefined; layout?: undefined }
  | {
      problem: undefined;
      numberTexts: readonly ObjectNumberTexts[];
      /**
       * Whether `numberTexts` holds the text of every number whose double may not be its exact value
       * (every one but short integer literals), so that the exact values can be read without a second parse.
       */
      everyInexactNumberKept: boolean;
      /** Undefined unless the document is an object. */
      layout: TopLevelLayout | undefined;
    };

interface Container {
  isObject: boolean;
  /** Member names seen so far, once there are two: most objects in a body have one member or none. */
  names: Set<string> | undefined;
  /** Where this object's number texts go; undefined where none are kept. */
  numbers: ObjectNumberTexts | undefined;
  expectingName: boolean;
  /** The member being read (objects). */
  current: string;
  /** The element (arrays) or member (objects) being read, counted from 0. */
  index: number;
}

/** A run of JSON whitespace, crossed with one native match rather than a step per character. */
const WHITESPACE_RUN = /[ \t\n\r]*/y;

/** The rest of a number token: digits, signs, points and exponent marks (JSON.parse checks the order). */
const NUMBER_TAIL = /[\d.eE+-]*/y;

/** Every integer of up to 15 digits is a safe integer (2^53 has 16): its double is its exact value. */
const MAX_EXACT_DOUBLE_DIGITS = 15;

/**
 * Index of the quote that closes the string opened at `start` (the text's end if it never closes).
 * A string without escapes is crossed with one native search. Once an escaped quote shows up, the rest
 * of the string is read character by character instead: hopping from quote to quote would cost a search
 * per escaped quote, and a string of nothing but `\"` would cost a call per two characters.
 */
function endOfString(text: string, start: number): number {
  const quote = text.indexOf('"', start + 1);
  if (quote === -1) return text.length;
  if (text.charCodeAt(quote - 1) !== Char.BACKSLASH) return quote;
  for (let position = start + 1; position < text.length; position += 1) {
    const code = text.charCodeAt(position);
    if (code === Char.QUOTE) return position;
    if (code === Char.BACKSLASH) position += 1;
  }
  return text.length;
}

function isDigit(code: number): boolean {
  return code >= Char.DIGIT_ZERO && code <= Char.DIGIT_NINE;
}

/** Index just past the whole number token at `start`, so that the `-30` of `1e-30` is not a number. */
function endOfNumber(text: string, start: number): number {
  NUMBER_TAIL.lastIndex = start + 1;
  NUMBER_TAIL.test(text);
  return NUMBER_TAIL.lastIndex;
}

/** Whether the double JSON.parse makes of the number token is exactly the value written. */
function isShortIntegerLiteral(text: string, start: number, end: number): boolean {
  const digitsStart = text.charCodeAt(start) === Char.MINUS ? start + 1 : start;
  if (end - digitsStart > MAX_EXACT_DOUBLE_DIGITS) return false;
  for (let position = digitsStart; position < end; position += 1) {
    if (!isDigit(text.charCodeAt(position))) return false;
  }
  return true;
}

/**
 * Names that would reach an object's prototype if any code downstream (ours, or the service's) copied
 * members by plain assignment or merged objects: JSON.parse alone keeps them harmless own properties, but
 * another reader of the same body may not, so they are refused wherever they appear.
 */
const RESERVED_MEMBER_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

/**
 * The name the string literal from `open` to `close` (its quotes) means; undefined when malformed. An
 * unterminated literal ends at the text's end instead: JSON.parse rejects that text, so its names are
 * never reported.
 */
function memberName(text: string, open: number, close: number): string | undefined {
  const name = text.slice(open + 1, close);
  if (!name.includes('\\')) return name;
  try {
    return JSON.parse(text.slice(open, close + 1)) as string;
  } catch {
    return undefined;
  }
}

/** The member names leading to the object being opened, when its number texts are to be kept. */
function numbersOfNewObject(stack: readonly Container[]): ObjectNumberTexts | undefined {
  const parent = stack.at(-1);
  if (parent === undefined) return { path: [], texts: new Map() };
  if (stack.length >= NUMBER_TEXT_DEPTH || parent.numbers === undefined) return undefined;
  return { path: [...parent.numbers.path, parent.current], texts: new Map() };
}

/** Whether `name` was seen before in the object; records it. `current` still holds the previous name. */
function isRepeatedName(object: Container, name: string): boolean {
  if (object.index === 0) return false;
  object.names ??= new Set([object.current]);
  if (object.names.has(name)) return true;
  object.names.add(name);
  return false;
}

function duplicatePath(stack: readonly Container[], name: string): string {
  // Reported once per body, so walking the stack here costs nothing per member.
  const segments = stack
    .slice(0, -1)
    .map((container) => (container.isObject ? container.current : String(container.index)));
  return [...segments, name].join('.');
}

/**
 * Scans a JSON text once. Nesting past MAX_JSON_DEPTH and more than MAX_JSON_VALUES values are
 * reported as soon as seen, so that a hostile document is dropped before JSON.parse spends time on it;
 * the other findings are only meaningful once JSON.parse has accepted the text.
 */
export function scanJsonStructure(text: string): JsonStructure {
  const stack: Container[] = [];
  const numberTexts: ObjectNumberTexts[] = [];
  let layout: TopLevelLayout | undefined;
  /** Where the top-level member being read starts its value; -1 between members. */
  let topLevelValueStart = -1;
  // After the first problem only the depth is still tracked: the problem is what will be reported.
  let problem: StructureProblem | undefined;
  let values = 0;
  let everyInexactNumberKept = true;
  const endTopLevelMember = (position: number) => {
    const [topLevel] = stack;
    if (layout !== undefined && topLevelValueStart !== -1 && stack.length === 1 && topLevel !== undefined) {
      layout.members.set(topLevel.current, { start: topLevelValueStart, end: position });
      topLevelValueStart = -1;
    }
  };
  for (let position = 0; position < text.length; position += 1) {
    const code = text.charCodeAt(position);
    const top = stack.at(-1);
    switch (code) {
      case Char.QUOTE: {
        const end = endOfString(text, position);
        const isName = top?.isObject === true && top.expectingName;
        if (!isName && (values += 1) > MAX_JSON_VALUES) return { problem: { kind: 'too_many_values' } };
        if (problem === undefined && isName) {
          const name = memberName(text, position, end);
          if (name !== undefined) {
            if (RESERVED_MEMBER_NAMES.has(name))
              problem = { kind: 'reserved_member', path: duplicatePath(stack, name) };
            else if (isRepeatedName(top, name))
              problem = { kind: 'duplicate_member', path: duplicatePath(stack, name) };
            top.current = name;
          }
        }
        position = end;
        break;
      }
      case Char.OPEN_OBJECT:
      case Char.OPEN_ARRAY: {
        if (stack.length === MAX_JSON_DEPTH) return { problem: { kind: 'too_deep' } };
        if ((values += 1) > MAX_JSON_VALUES) return { problem: { kind: 'too_many_values' } };
        const isObject = code === Char.OPEN_OBJECT;
        if (isObject && stack.length === 0) layout = { members: new Map(), closingBrace: -1 };
        const numbers = isObject ? numbersOfNewObject(stack) : undefined;
        if (numbers !== undefined) numberTexts.push(numbers);
        stack.push({
          isObject,
          names: undefined,
          numbers,
          expectingName: isObject,
          current: '',
          index: 0,
        });
        break;
      }
      case Char.CLOSE_OBJECT:
      case Char.CLOSE_ARRAY:
        endTopLevelMember(position);
        if (stack.length === 1 && layout !== undefined) layout.closingBrace = position;
        stack.pop();
        break;
      case Char.COMMA:
        endTopLevelMember(position);
        if (top !== undefined) {
          top.expectingName = top.isObject;
          top.index += 1;
        }
        break;
      case Char.COLON:
        if (top !== undefined) top.expectingName = false;
        if (stack.length === 1) topLevelValueStart = position + 1;
        break;
      case Char.LOWER_T:
      case Char.LOWER_F:
      case Char.LOWER_N:
        // true, false, null: none of their other letters starts a literal.
        if ((values += 1) > MAX_JSON_VALUES) return { problem: { kind: 'too_many_values' } };
        break;
      case Char.SPACE:
      case Char.TAB:
      case Char.LINE_FEED:
      case Char.CARRIAGE_RETURN:
        WHITESPACE_RUN.lastIndex = position;
        WHITESPACE_RUN.test(text);
        position = WHITESPACE_RUN.lastIndex - 1;
        break;
      default: {
        if (code !== Char.MINUS && !isDigit(code)) break;
        if ((values += 1) > MAX_JSON_VALUES) return { problem: { kind: 'too_many_values' } };
        const end = endOfNumber(text, position);
        if (!isShortIntegerLiteral(text, position, end)) {
          if (top?.numbers === undefined) everyInexactNumberKept = false;
          else if (problem === undefined) top.numbers.texts.set(top.current, text.slice(position, end));
        }
        position = end - 1;
        break;
      }
    }
  }
  if (problem !== undefined) return { problem };
  return {
    problem,
    numberTexts: numberTexts.filter((object) => object.texts.size > 0),
    everyInexactNumberKept,
    layout,
  };
}

// One pass over a JSON text for what JSON.parse does not give: how deep the document nests, whether an
// object names a member twice (however its name is escaped), the source text of the numbers a schema may
// judge, and where each top-level member's value sits so that a rewrite can splice new values in and
// leave every other byte as sent. Only brackets, commas, colons, member names and numbers are read;
// anything this scanner skips over without looking is left to JSON.parse, which must accept the text
// before the scan's findings mean anything. Every step is constant work per character or per member
// (strings are skipped with indexOf), so the scan is linear in the text whatever its shape.

/** Deep enough for any real request (the service's own bodies nest 3 levels), far below stack limits. */
export const MAX_JSON_DEPTH = 32;

/**
 * Number texts are kept for members of objects up to this depth, reached through objects only: the
 * request schemas judge numbers no deeper (`dimensions.outpaint.top` sits at depth 3), and nothing reads
 * the numbers elsewhere, which are forwarded byte for byte. Keeping none there keeps a body of a
 * million numbers from costing a million kept texts.
 */
export const NUMBER_TEXT_DEPTH = 3;

export type StructureProblem = { kind: 'too_deep' } | { kind: 'duplicate_member'; path: string };

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
      /** Undefined unless the document is an object. */
      layout: TopLevelLayout | undefined;
    };

interface Container {
  /** Member names seen so far; undefined for an array. */
  names: Set<string> | undefined;
  /** Where this object's number texts go; undefined where none are kept. */
  numbers: ObjectNumberTexts | undefined;
  expectingName: boolean;
  /** The member being read (objects). */
  current: string;
  /** The element being read (arrays). */
  index: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_ZERO = 0x30;
const DIGIT_NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;

/** Every integer of up to 15 digits is a safe integer (2^53 has 16): its double is its exact value. */
const MAX_EXACT_DOUBLE_DIGITS = 15;

/** Index of the quote that closes the string opened at `start` (the text's end if it never closes). */
function endOfString(text: string, start: number): number {
  let quote = text.indexOf('"', start + 1);
  while (quote !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return text.length;
}

function isDigit(code: number): boolean {
  return code >= DIGIT_ZERO && code <= DIGIT_NINE;
}

function isNumberPart(code: number): boolean {
  return (
    isDigit(code) || code === DOT || code === LOWER_E || code === UPPER_E || code === PLUS || code === MINUS
  );
}

/** Index just past the whole number token at `start`, so that the `-30` of `1e-30` is not a number. */
function endOfNumber(text: string, start: number): number {
  let end = start + 1;
  while (isNumberPart(text.charCodeAt(end))) end += 1;
  return end;
}

/** Whether the double JSON.parse makes of the number token is exactly the value written. */
function isShortIntegerLiteral(text: string, start: number, end: number): boolean {
  const digitsStart = text.charCodeAt(start) === MINUS ? start + 1 : start;
  if (end - digitsStart > MAX_EXACT_DOUBLE_DIGITS) return false;
  for (let position = digitsStart; position < end; position += 1) {
    if (!isDigit(text.charCodeAt(position))) return false;
  }
  return true;
}

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

function duplicatePath(stack: readonly Container[], name: string): string {
  // Reported once per body, so walking the stack here costs nothing per member.
  const segments = stack
    .slice(0, -1)
    .map((container) => (container.names === undefined ? String(container.index) : container.current));
  return [...segments, name].join('.');
}

/**
 * Scans a JSON text once. Nesting past MAX_JSON_DEPTH is reported as soon as it is seen, so that a
 * hostile document is dropped before JSON.parse spends time on it; the other findings are only
 * meaningful once JSON.parse has accepted the text.
 */
export function scanJsonStructure(text: string): JsonStructure {
  const stack: Container[] = [];
  const numberTexts: ObjectNumberTexts[] = [];
  let layout: TopLevelLayout | undefined;
  /** Where the top-level member being read starts its value; -1 between members. */
  let topLevelValueStart = -1;
  // After the first problem only the depth is still tracked: the problem is what will be reported.
  let problem: StructureProblem | undefined;
  const endTopLevelMember = (position: number) => {
    if (layout !== undefined && topLevelValueStart !== -1 && stack.length === 1) {
      layout.members.set(stack[0]!.current, { start: topLevelValueStart, end: position });
      topLevelValueStart = -1;
    }
  };
  for (let position = 0; position < text.length; position += 1) {
    const code = text.charCodeAt(position);
    const top = stack.at(-1);
    switch (code) {
      case QUOTE: {
        const end = endOfString(text, position);
        if (problem === undefined && top?.names !== undefined && top.expectingName) {
          const name = memberName(text, position, end);
          if (name !== undefined) {
            if (top.names.has(name)) problem = { kind: 'duplicate_member', path: duplicatePath(stack, name) };
            top.names.add(name);
            top.current = name;
          }
        }
        position = end;
        break;
      }
      case OPEN_OBJECT:
      case OPEN_ARRAY: {
        if (stack.length === MAX_JSON_DEPTH) return { problem: { kind: 'too_deep' } };
        const isObject = code === OPEN_OBJECT;
        if (isObject && stack.length === 0) layout = { members: new Map(), closingBrace: -1 };
        const numbers = isObject ? numbersOfNewObject(stack) : undefined;
        if (numbers !== undefined) numberTexts.push(numbers);
        stack.push({
          names: isObject ? new Set() : undefined,
          numbers,
          expectingName: isObject,
          current: '',
          index: 0,
        });
        break;
      }
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        endTopLevelMember(position);
        if (stack.length === 1 && layout !== undefined) layout.closingBrace = position;
        stack.pop();
        break;
      case COMMA:
        endTopLevelMember(position);
        if (top !== undefined) {
          top.expectingName = top.names !== undefined;
          top.index += 1;
        }
        break;
      case COLON:
        if (top !== undefined) top.expectingName = false;
        if (stack.length === 1) topLevelValueStart = position + 1;
        break;
      default: {
        if (code !== MINUS && !isDigit(code)) break;
        const end = endOfNumber(text, position);
        if (problem === undefined && top?.numbers !== undefined && !isShortIntegerLiteral(text, position, end)) {
          top.numbers.texts.set(top.current, text.slice(position, end));
        }
        position = end - 1;
        break;
      }
    }
  }
  if (problem !== undefined) return { problem };
  return { problem, numberTexts: numberTexts.filter((object) => object.texts.size > 0), layout };
}

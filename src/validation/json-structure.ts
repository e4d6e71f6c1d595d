// One pass over a JSON text for what JSON.parse does not give: how deep the document nests, whether an
// object names a member twice or uses a name that reaches for a prototype, and where the integers a
// double cannot hold sit. Only brackets, commas, colons, member names and numbers are read; anything
// this scanner skips over without looking is left to JSON.parse, which must accept the text before the
// scan's findings mean anything.

/** Deep enough for any real request (the service's own bodies nest 3 levels), far below stack limits. */
export const MAX_JSON_DEPTH = 32;

/**
 * Names that would reach an object's prototype if any later code (ours, or the service's) copied
 * members with plain assignment. JSON.parse alone keeps them harmless; refusing them keeps them so.
 */
const RESERVED_MEMBER_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

/** A member name, or an element index. */
export type PathSegment = string | number;

export type StructureProblem =
  { kind: 'too_deep' } | { kind: 'duplicate_member' | 'reserved_member'; path: string };

/** An integer literal that is not a safe integer: the double JSON.parse makes of it may not be its value. */
export interface ExactInteger {
  /** The segments from the top-level value to the object or array that holds the integer. */
  containerPath: readonly PathSegment[];
  /** Where the integer sits in that container. */
  key: PathSegment;
  /** The client's digits, with the sign. */
  literal: string;
}

/** A text with a problem has no reliable paths (a duplicate makes one ambiguous), so none are given. */
export type JsonStructure =
  | { problem: StructureProblem; exactIntegers?: undefined }
  | { problem: undefined; exactIntegers: readonly ExactInteger[] };

interface Container {
  /** Member names seen so far; undefined for an array. */
  names: Set<string> | undefined;
  /** Where this container sits in its parent; undefined at the top. */
  segment: PathSegment | undefined;
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

/** Every integer of up to 15 digits is a safe integer (2^53 has 16), so shorter ones need no check. */
const MAX_ALWAYS_SAFE_DIGITS = 15;

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

function endOfDigits(text: string, start: number): number {
  let end = start;
  while (isDigit(text.charCodeAt(end))) end += 1;
  return end;
}

/** Index just past the whole number token at `start`, so that the `-30` of `1e-30` is not a number. */
function endOfNumber(text: string, start: number): number {
  let end = start + 1;
  while (isNumberPart(text.charCodeAt(end))) end += 1;
  return end;
}

/** Whether the number token from `start` to `end` is an integer literal that is not a safe integer. */
function isUnsafeIntegerLiteral(text: string, start: number, end: number): boolean {
  const digitsStart = text.charCodeAt(start) === MINUS ? start + 1 : start;
  if (end - digitsStart <= MAX_ALWAYS_SAFE_DIGITS) return false;
  return endOfDigits(text, digitsStart) === end && !Number.isSafeInteger(Number(text.slice(start, end)));
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

/** Where the value being read sits in `container`. */
function currentKey(container: Container): PathSegment {
  return container.names === undefined ? container.index : container.current;
}

function containerPath(stack: readonly Container[]): PathSegment[] {
  const segments: PathSegment[] = [];
  for (const container of stack) if (container.segment !== undefined) segments.push(container.segment);
  return segments;
}

function pathTo(stack: readonly Container[], name: string): string {
  return [...containerPath(stack), name].join('.');
}

function nameProblem(
  stack: readonly Container[],
  names: Set<string>,
  name: string,
): StructureProblem | undefined {
  if (RESERVED_MEMBER_NAMES.has(name)) return { kind: 'reserved_member', path: pathTo(stack, name) };
  if (names.has(name)) return { kind: 'duplicate_member', path: pathTo(stack, name) };
  return undefined;
}

/**
 * Scans a JSON text once. Nesting past MAX_JSON_DEPTH is reported as soon as it is seen, so that a
 * hostile document is dropped before JSON.parse spends time on it; the other findings are only
 * meaningful once JSON.parse has accepted the text.
 */
export function scanJsonStructure(text: string): JsonStructure {
  const stack: Container[] = [];
  const exactIntegers: ExactInteger[] = [];
  // After the first problem only the depth is still tracked: the problem is what will be reported.
  let problem: StructureProblem | undefined;
  for (let position = 0; position < text.length; position += 1) {
    const code = text.charCodeAt(position);
    const top = stack.at(-1);
    switch (code) {
      case QUOTE: {
        const end = endOfString(text, position);
        if (problem === undefined && top?.names !== undefined && top.expectingName) {
          const name = memberName(text, position, end);
          if (name !== undefined) {
            problem = nameProblem(stack, top.names, name);
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
        stack.push({
          names: isObject ? new Set() : undefined,
          segment: top === undefined ? undefined : currentKey(top),
          expectingName: isObject,
          current: '',
          index: 0,
        });
        break;
      }
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        stack.pop();
        break;
      case COMMA:
        if (top !== undefined) {
          top.expectingName = top.names !== undefined;
          top.index += 1;
        }
        break;
      case COLON:
        if (top !== undefined) top.expectingName = false;
        break;
      default: {
        if (code !== MINUS && !isDigit(code)) break;
        const end = endOfNumber(text, position);
        // A bare number is a whole document, never a body: only integers inside a container are kept.
        if (problem === undefined && top !== undefined && isUnsafeIntegerLiteral(text, position, end)) {
          const literal = text.slice(position, end);
          exactIntegers.push({ containerPath: containerPath(stack), key: currentKey(top), literal });
        }
        position = end - 1;
        break;
      }
    }
  }
  return problem === undefined ? { problem, exactIntegers } : { problem };
}

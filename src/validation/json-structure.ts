// What JSON.parse does not check: how deep a document nests, and whether an object names a member twice
// or uses a name that reaches for a prototype. Only brackets, commas, colons and member names are read;
// values are left to JSON.parse, which rejects anything this scanner skips over without looking.

/** Deep enough for any real request (the service's own bodies nest 3 levels), far below stack limits. */
export const MAX_JSON_DEPTH = 32;

/**
 * Names that would reach an object's prototype if any later code (ours, or the service's) copied
 * members with plain assignment. JSON.parse alone keeps them harmless; refusing them keeps them so.
 */
const RESERVED_MEMBER_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor']);

export type StructureProblem =
  { kind: 'too_deep' } | { kind: 'duplicate_member' | 'reserved_member'; path: string };

interface Container {
  /** Member names seen so far; undefined for an array. */
  names: Set<string> | undefined;
  /** Where this container sits in its parent (member name or element index); undefined at the top. */
  segment: string | undefined;
  expectingName: boolean;
  /** The member being read (objects) or the element index (arrays). */
  current: string;
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

/** The name a member-name literal means, escapes decoded; undefined when the literal is malformed. */
function decodeName(literal: string): string | undefined {
  if (!literal.includes('\\')) return literal.slice(1, -1);
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}

function pathTo(stack: readonly Container[], name: string): string {
  const segments: string[] = [];
  for (const container of stack) if (container.segment !== undefined) segments.push(container.segment);
  segments.push(name);
  return segments.join('.');
}

function checkName(
  stack: readonly Container[],
  object: Container,
  names: Set<string>,
  name: string,
): StructureProblem | undefined {
  object.current = name;
  if (RESERVED_MEMBER_NAMES.has(name)) return { kind: 'reserved_member', path: pathTo(stack, name) };
  if (names.has(name)) return { kind: 'duplicate_member', path: pathTo(stack, name) };
  names.add(name);
  return undefined;
}

/**
 * Finds the first structural problem of a JSON text. Nesting past MAX_JSON_DEPTH is reported as soon as
 * it is seen, so that a hostile document is dropped before JSON.parse spends time on it; other
 * problems are only meaningful once JSON.parse has accepted the text.
 */
export function findStructureProblem(text: string): StructureProblem | undefined {
  const stack: Container[] = [];
  let firstNameProblem: StructureProblem | undefined;
  for (let position = 0; position < text.length; position += 1) {
    const code = text.charCodeAt(position);
    const top = stack.at(-1);
    switch (code) {
      case QUOTE: {
        const end = endOfString(text, position);
        if (firstNameProblem === undefined && top?.names !== undefined && top.expectingName) {
          const name = decodeName(text.slice(position, end + 1));
          if (name !== undefined) firstNameProblem = checkName(stack, top, top.names, name);
        }
        position = end;
        break;
      }
      case OPEN_OBJECT:
      case OPEN_ARRAY: {
        if (stack.length === MAX_JSON_DEPTH) return { kind: 'too_deep' };
        const isObject = code === OPEN_OBJECT;
        stack.push({
          names: isObject ? new Set() : undefined,
          segment: top === undefined ? undefined : top.names === undefined ? String(top.index) : top.current,
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
      default:
        break;
    }
  }
  return firstNameProblem;
}

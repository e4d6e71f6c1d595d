// The gateway's only parse of a request body (src/gateway/json-body-parser.ts hands it the bytes): one
// strict parse whose result drives every decision and whose raw bytes are what the upstream receives.
// The structure scan keeps the source text of every number a schema judges (so nothing is judged on a
// rounded double) and where each top-level member's value sits, so that a rewrite splices new values
// into the client's bytes: every number, escape and space the client wrote reaches the upstream as
// written, rewritten or not. The parse itself is plain JSON.parse.
import { echoedName } from '../json/echoed-name.ts';
import { gatewayError } from '../errors/registry.ts';
import { NumberTexts, type MemberNumberTexts } from '../json/number-texts.ts';
import {
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  scanJsonStructure,
  type ObjectNumberTexts,
  type TopLevelLayout,
  type ValueSpan,
} from './json-structure.ts';

export interface JsonBody {
  /** The bytes the upstream receives: the client's, or the client's with top-level members spliced. */
  raw: Buffer;
  /** The parsed object, numbers as JSON.parse reads them; judge numbers through `numbers`. */
  value: Record<string, unknown>;
  /** The source text of the numbers the schemas judge. */
  numbers: NumberTexts;
  /**
   * Whether `numbers` also holds the text of every other number whose double may not be its exact value
   * (all but short integer literals): then `value` and `numbers` give every number's exact value.
   */
  everyInexactNumberKept: boolean;
  /** Where the top-level members' values sit in `raw` decoded. */
  layout: TopLevelLayout;
}

// `fatal` rejects invalid UTF-8; `ignoreBOM` keeps a BOM in the text so that JSON.parse rejects it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** A media type parameter: its name, and its value as a token or a quoted string. */
const MEDIA_TYPE_PARAMETER = /;\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]*)/g;

/**
 * UTF-8 is the only charset (RFC 8259 section 8.1): a body declared in another one, or with the charset
 * named twice, would be read one way here and perhaps another way upstream.
 */
export function assertUtf8Charset(contentType: string | undefined): void {
  if (contentType === undefined) return;
  let charsets = 0;
  for (const [, name = '', value = ''] of contentType.matchAll(MEDIA_TYPE_PARAMETER)) {
    if (name.toLowerCase() !== 'charset') continue;
    charsets += 1;
    const charset = value.startsWith('"') ? value.slice(1, -1) : value;
    if (charsets > 1 || charset.toLowerCase() !== 'utf-8') {
      throw gatewayError('charset_not_utf8');
    }
  }
}

function decodeUtf8(raw: Buffer): string {
  try {
    return utf8.decode(raw);
  } catch (error) {
    throw gatewayError('body_not_utf8_json', { cause: error });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw gatewayError('body_not_utf8_json', { cause: error });
  }
}

/** Ties each kept set of number texts to the object JSON.parse made at its path. */
function numberTextsOf(body: Record<string, unknown>, kept: readonly ObjectNumberTexts[]): NumberTexts {
  if (kept.length === 0) return NumberTexts.none;
  const byObject = new Map<object, MemberNumberTexts>();
  for (const { path, texts } of kept) {
    let object: unknown = body;
    for (const name of path) object = (object as Record<string, unknown>)[name];
    byObject.set(object as object, texts);
  }
  return new NumberTexts(byObject);
}

export function parseJsonBody(raw: Buffer): JsonBody {
  if (raw.length === 0) throw gatewayError('body_empty');
  const text = decodeUtf8(raw);
  const structure = scanJsonStructure(text);
  if (structure.problem?.kind === 'too_deep') {
    throw gatewayError('body_too_deep', { maxDepth: MAX_JSON_DEPTH });
  }
  if (structure.problem?.kind === 'too_many_values') {
    throw gatewayError('body_too_many_values', { maxValues: MAX_JSON_VALUES });
  }
  const value = parseJson(text);
  if (structure.problem?.kind === 'reserved_member') {
    throw gatewayError('body_reserved_member', { param: echoedName(structure.problem.path) });
  }
  if (structure.problem !== undefined) {
    throw gatewayError('body_duplicate_member', { param: echoedName(structure.problem.path) });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !structure.layout) {
    throw gatewayError('body_not_object');
  }
  const body = value as Record<string, unknown>;
  return {
    raw,
    value: body,
    numbers: numberTextsOf(body, structure.numberTexts),
    everyInexactNumberKept: structure.everyInexactNumberKept,
    layout: structure.layout,
  };
}

/**
 * The body with the top-level members named in `rewritten` set to their values in `value` (a copy of the
 * body's value with those members changed): each present member's value text is replaced, each absent
 * one appended before the closing brace. Every other byte stays as the client sent it.
 */
export function rewriteTopLevelMembers(
  body: JsonBody,
  value: Record<string, unknown>,
  rewritten: readonly string[],
): JsonBody {
  const text = body.raw.toString('utf8');
  const pieces: string[] = [];
  const members = new Map<string, ValueSpan>();
  let cursor = 0;
  /** How far everything after `cursor` has moved. */
  let shift = 0;
  for (const [name, span] of body.layout.members) {
    if (!rewritten.includes(name)) {
      members.set(name, { start: span.start + shift, end: span.end + shift });
      continue;
    }
    const replacement = JSON.stringify(value[name]);
    pieces.push(text.slice(cursor, span.start), replacement);
    members.set(name, { start: span.start + shift, end: span.start + shift + replacement.length });
    shift += replacement.length - (span.end - span.start);
    cursor = span.end;
  }
  pieces.push(text.slice(cursor, body.layout.closingBrace));
  let closingBrace = body.layout.closingBrace + shift;
  for (const name of rewritten) {
    if (members.has(name)) continue;
    const member = `${members.size === 0 ? '' : ','}${JSON.stringify(name)}:`;
    const replacement = JSON.stringify(value[name]);
    pieces.push(member, replacement);
    members.set(name, {
      start: closingBrace + member.length,
      end: closingBrace + member.length + replacement.length,
    });
    closingBrace += member.length + replacement.length;
  }
  pieces.push(text.slice(body.layout.closingBrace));
  return {
    raw: Buffer.from(pieces.join(''), 'utf8'),
    value,
    numbers: body.numbers.withObjectReplaced(body.value, value, rewritten),
    // The rewritten members' numbers are doubles written anew, without texts of their own.
    everyInexactNumberKept: false,
    layout: { members, closingBrace },
  };
}

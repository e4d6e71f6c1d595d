// The members of a polled record that metering and the job tracker read (`data.id`, `data.totalCost`,
// `data.completedAt`, `data.status`, `data.cancelledAt`), found without parsing the record. A finished image record carries its results,
// base64 images included, so parsing it whole would build megabytes of strings on the event loop for
// one number. This reads the bytes once, skipping every string's contents with a native byte search,
// and decodes only the member names and the values it wants: time linear in the body with a
// small constant, and memory independent of it.

import * as Char from '../json/char-codes.ts';

export interface RecordSummary {
  id?: string;
  totalCost?: number;
  completedAt?: string;
  /** What the job tracker reads to tell a record's end (src/jobs/outcome.ts). */
  status?: string;
  cancelledAt?: string;
}

interface Container {
  isObject: boolean;
  expectingName: boolean;
  /** The member being read (objects). */
  current: string | undefined;
}

/**
 * Index of the quote that closes the string opened at `start` (the body's end if it never closes): one
 * native search for a string without escapes; once an escaped quote shows up, byte by byte, so that a
 * string of escaped quotes costs no search per quote. (The request scanner, src/validation/
 * json-structure.ts, does the same over text; this one reads bytes to decode nothing.)
 */
function endOfString(body: Buffer, start: number): number {
  const quote = body.indexOf(Char.QUOTE, start + 1);
  if (quote === -1) return body.length;
  if (body[quote - 1] !== Char.BACKSLASH) return quote;
  for (let position = start + 1; position < body.length; position += 1) {
    const code = body[position];
    if (code === Char.QUOTE) return position;
    if (code === Char.BACKSLASH) position += 1;
  }
  return body.length;
}

function decodeString(body: Buffer, open: number, close: number): string | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8', open, close + 1));
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

function isNumberStart(code: number): boolean {
  return code === Char.MINUS || (code >= Char.DIGIT_ZERO && code <= Char.DIGIT_NINE);
}

function endOfToken(body: Buffer, start: number): number {
  let end = start + 1;
  while (end < body.length && isNumberPart(body[end] ?? 0)) end += 1;
  return end;
}

function isNumberPart(code: number): boolean {
  // Digits, '.', 'e', 'E', '+', '-'.
  return isNumberStart(code) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b;
}

/**
 * The summary members of the record under the top-level `data` object; a member that is missing or of
 * another type is left out. The body is trusted to be the upstream's JSON: no other member is checked.
 */
export function readRecordSummary(body: Buffer): RecordSummary {
  const stack: Container[] = [];
  const summary: RecordSummary = {};
  // The member of the record being read; undefined outside the record (the object `data` names).
  const recordMember = () =>
    stack.length === 2 && stack[0]?.current === 'data' && stack[1]?.isObject === true
      ? stack[1].current
      : undefined;
  for (let position = 0; position < body.length; position += 1) {
    const code = body[position] ?? 0;
    const top = stack.at(-1);
    if (code === Char.QUOTE) {
      const end = endOfString(body, position);
      const member = recordMember();
      if (top?.isObject === true && top.expectingName) {
        // Only the names of the top level and of the record matter; deeper ones are not decoded.
        top.current = stack.length <= 2 ? decodeString(body, position, end) : undefined;
      } else if (
        member === 'id' ||
        member === 'completedAt' ||
        member === 'status' ||
        member === 'cancelledAt'
      ) {
        const value = decodeString(body, position, end);
        if (value !== undefined) summary[member] = value;
      }
      position = end;
    } else if (code === Char.OPEN_OBJECT || code === Char.OPEN_ARRAY) {
      stack.push({
        isObject: code === Char.OPEN_OBJECT,
        expectingName: code === Char.OPEN_OBJECT,
        current: undefined,
      });
    } else if (code === Char.CLOSE_OBJECT || code === Char.CLOSE_ARRAY) {
      stack.pop();
    } else if (code === Char.COMMA) {
      if (top !== undefined) top.expectingName = top.isObject;
    } else if (code === Char.COLON) {
      if (top !== undefined) top.expectingName = false;
    } else if (isNumberStart(code)) {
      const end = endOfToken(body, position);
      if (recordMember() === 'totalCost') {
        const cost = Number(body.toString('latin1', position, end));
        if (Number.isFinite(cost)) summary.totalCost = cost;
      }
      position = end - 1;
    }
  }
  return summary;
}

// What makes two creates with one requestId the same submission (contract section 7, after the IETF
// Idempotency-Key draft): the same route and the same body as the client sent it, before the tenant's
// policy rewrote it (a policy changed by a reload does not make a repeat different), compared parsed:
// spacing, escapes and member order do not count, numbers are compared by their exact value (`20`,
// `20.0` and `2e1` are one number; 9223372036854775807 and 9223372036854775808 are two, though a double
// cannot tell them apart). The requestId itself is the key, not part of what it names.
import { createHash } from 'node:crypto';
import type { RouteId } from '../config/route-ids.ts';
import { parseExactDecimal } from '../json/exact-decimal.ts';

/** A number as its exact value, in one spelling: `-0.<significant digits>e<order>`, `0` for zero. */
class CanonicalNumber {
  readonly text: string;
  constructor(source: string) {
    const { negative, digits, order } = parseExactDecimal(source);
    this.text = digits === '' ? '0' : `${negative ? '-' : ''}0.${digits}e${order}`;
  }
}

function exactNumbers(_key: string, value: unknown, context: JsonReviverContext): unknown {
  return typeof value === 'number' ? new CanonicalNumber(context.source ?? String(value)) : value;
}

/** Appends `value` in canonical form: members sorted by name, numbers by their exact value. */
function writeCanonical(value: unknown, parts: string[]): void {
  if (value instanceof CanonicalNumber) {
    parts.push(value.text);
  } else if (Array.isArray(value)) {
    parts.push('[');
    value.forEach((item: unknown, index) => {
      if (index > 0) parts.push(',');
      writeCanonical(item, parts);
    });
    parts.push(']');
  } else if (typeof value === 'object' && value !== null) {
    parts.push('{');
    const object = value as Record<string, unknown>;
    Object.keys(object)
      .sort()
      .forEach((name, index) => {
        if (index > 0) parts.push(',');
        parts.push(JSON.stringify(name), ':');
        writeCanonical(object[name], parts);
      });
    parts.push('}');
  } else {
    parts.push(JSON.stringify(value));
  }
}

/**
 * The fingerprint of a create: a hash of its route and its body's canonical form. `clientBody` is the
 * body as the client sent it, already parsed once and judged a JSON object within the nesting and size
 * limits (src/validation/json-body.ts), so this second parse cannot fail and costs time linear in it.
 */
export function submissionFingerprint(route: RouteId, clientBody: Buffer): string {
  const parsed = JSON.parse(clientBody.toString('utf8'), exactNumbers) as Record<string, unknown>;
  delete parsed.requestId;
  const parts: string[] = [route, '\n'];
  writeCanonical(parsed, parts);
  return createHash('sha256').update(parts.join('')).digest('base64url');
}

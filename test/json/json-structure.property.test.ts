// The gateway's body parse (structure scan + JSON.parse) against references on generated documents:
// JSON.parse for validity and values, a tokenizer-based detector written here for duplicate and reserved
// member names, and, through a policy rewrite, every number's text against the text the document was
// built from.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../src/errors/registry.ts';
import { applyPolicy } from '../../src/policy/apply-policy.ts';
import { parseJsonBody, rewriteTopLevelMembers } from '../../src/validation/json-body.ts';

const whitespace = fc.constantFrom('', ' ', '\n', '\t ', '\r\n  ');

/** A member name from a small set, so that duplicates happen, each character perhaps \u-escaped. */
const memberName = fc
  .tuple(
    fc.constantFrom('a', 'b', 'seed', 'samples', '__proto__', 'constructor', 'é'),
    fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }),
  )
  .map(
    ([name, escapes]) =>
      `"${Array.from({ length: name.length }, (_, index) =>
        escapes[index] === true
          ? `\\u${name.charCodeAt(index).toString(16).padStart(4, '0')}`
          : name.charAt(index),
      ).join('')}"`,
  );

const numberText = fc
  .tuple(
    fc.constantFrom('', '-'),
    fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9]\d{0,30}$/)),
    fc.constantFrom('', '.0', '.5', '.0000000000000001', '.1234567890123456789'),
    fc.constantFrom('', 'e0', 'E+2', 'e-400', 'e400', 'e18'),
  )
  .map((parts) => parts.join(''));

const stringValue = fc.constantFrom('""', '"x"', '"\\"quoted\\" {[,:"', '"\\\\"', '"\\u0041"', '"1e400"');

const { document } = fc.letrec<{ value: string; object: string; array: string; document: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText,
    stringValue,
    fc.constantFrom('true', 'false', 'null'),
    tie('object'),
    tie('array'),
  ),
  object: fc
    .array(fc.tuple(whitespace, memberName, whitespace, tie('value')), { maxLength: 5 })
    .map(
      (members) =>
        `{${members.map(([before, name, after, value]) => `${before}${name}${after}:${value}`).join(',')}}`,
    ),
  array: fc.array(tie('value'), { maxLength: 4 }).map((values) => `[${values.join(', ')}]`),
  document: fc.oneof({ weight: 5, arbitrary: tie('object') }, { weight: 1, arbitrary: tie('value') }),
}));

/** A document with one character deleted or one inserted, or left whole. */
const maybeBroken = fc
  .tuple(
    document,
    fc.nat(),
    fc.constantFrom(undefined, '', '{', '}', '[', ']', ',', ':', '"', '\\', '0', '-', 'e', ' '),
  )
  .map(([text, at, change]) => {
    if (change === undefined || text.length === 0) return text;
    const position = at % text.length;
    return change === ''
      ? text.slice(0, position) + text.slice(position + 1)
      : text.slice(0, position) + change + text.slice(position);
  });

const TOKEN = /\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}[\]:,])/gy;

const RESERVED_NAMES = new Set(['__proto__', 'constructor']);

/**
 * Reference detection of the first member-name problem, in document order, for a text JSON.parse
 * accepted: a reserved name, or a name its object already has. Tokens; names decoded by JSON.parse.
 */
function firstMemberProblem(text: string): 'reserved' | 'duplicate' | undefined {
  const stack: { names: Set<string> | undefined; expectingName: boolean }[] = [];
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    const token = match[1]!;
    const top = stack.at(-1);
    if (token === '{') stack.push({ names: new Set(), expectingName: true });
    else if (token === '[') stack.push({ names: undefined, expectingName: false });
    else if (token === '}' || token === ']') stack.pop();
    else if (token === ':' && top !== undefined) top.expectingName = false;
    else if (token === ',' && top !== undefined) top.expectingName = top.names !== undefined;
    else if (token.startsWith('"') && top?.names !== undefined && top.expectingName) {
      const name = JSON.parse(token) as string;
      if (RESERVED_NAMES.has(name)) return 'reserved';
      if (top.names.has(name)) return 'duplicate';
      top.names.add(name);
    }
  }
  return undefined;
}

type Verdict = 'ok' | 'syntax' | 'duplicate' | 'reserved' | 'not_object';

function referenceVerdict(text: string): Verdict {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'syntax';
  }
  const problem = firstMemberProblem(text);
  if (problem !== undefined) return problem;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? 'ok' : 'not_object';
}

function gatewayVerdict(text: string): Verdict {
  try {
    expect(parseJsonBody(Buffer.from(text)).value).toStrictEqual(JSON.parse(text));
    return 'ok';
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    expect(error.code).toBe('invalid_json');
    if (error.message.includes('appears more than once')) return 'duplicate';
    if (error.message.includes('is a reserved member name')) return 'reserved';
    if (error.message === 'the request body must be a JSON object') return 'not_object';
    if (error.message === 'the request body is empty; send a JSON object') return 'syntax';
    expect(error.message).toBe('the request body is not valid UTF-8 JSON');
    return 'syntax';
  }
}

describe('the body parse against JSON.parse and a reference duplicate detector', () => {
  test('same verdict on validity and duplicates; the same values when accepted', () => {
    fc.assert(
      fc.property(maybeBroken, (text) => {
        expect(gatewayVerdict(text)).toBe(referenceVerdict(text));
      }),
      { numRuns: 3_000 },
    );
  });
});

/** Every number token of a text, in order (strings skipped). */
function numberTokens(text: string): string[] {
  const numbers: string[] = [];
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    if (/^-?\d/.test(match[1]!)) numbers.push(match[1]!);
  }
  return numbers;
}

describe('every number keeps its text through a policy rewrite', () => {
  const policy = {
    mode: 'enforce',
    samples: { maximum: 4, onViolation: 'clamp' },
    safetyLevel: { minimum: 'high', onViolation: 'raise' },
    scanResults: { require: true },
  } as const;
  const uniqueNames = (members: [string, string][]) => new Map(members.map(([name, value]) => [name, value]));

  test('the rewritten members change; every other number arrives as written', () => {
    const body = fc
      .record({
        samples: fc.constantFrom('5', '8.0', '2e1', '20', '1', undefined),
        others: fc.array(
          fc.tuple(
            fc.constantFrom('seed', 'input', 'dimensions', 'CFGScale', 'steps'),
            fc.oneof(numberText, document),
          ),
          { maxLength: 5 },
        ),
        spacing: whitespace,
      })
      .map(({ samples, others, spacing }) => {
        const members = uniqueNames([
          ...(samples === undefined ? [] : [['samples', samples] as [string, string]]),
          ...others,
        ]);
        return `{${[...members].map(([name, value]) => `${spacing}"${name}":${spacing}${value}`).join(',')}${spacing}}`;
      })
      .filter((text) => referenceVerdict(text) === 'ok');
    fc.assert(
      fc.property(body, (text) => {
        const parsed = parseJsonBody(Buffer.from(text));
        const outcome = applyPolicy(policy, 'images.create', parsed.value, parsed.numbers);
        const rewritten = rewriteTopLevelMembers(
          parsed,
          outcome.body,
          outcome.changes.map((change) => change.field),
        );
        const forwarded = rewritten.raw.toString('utf8');
        expect(JSON.parse(forwarded)).toStrictEqual(outcome.body);
        const samplesChanged = outcome.changes.some((change) => change.field === 'samples');
        const samplesText = samplesChanged
          ? (parsed.numbers.textOf(parsed.value, 'samples') ?? String(parsed.value.samples))
          : undefined;
        const expected = numberTokens(text);
        if (samplesText !== undefined) expected.splice(expected.indexOf(samplesText), 1, '4');
        expect(numberTokens(forwarded).sort()).toStrictEqual(expected.sort());
        // The new layout locates every member, so that a later rewrite (the assigned requestId) can splice.
        for (const { field } of outcome.changes) {
          const span = rewritten.layout.members.get(field)!;
          expect(forwarded.slice(span.start, span.end)).toBe(JSON.stringify(outcome.body[field]));
        }
        expect(forwarded.charAt(rewritten.layout.closingBrace)).toBe('}');
        for (const [name, span] of parsed.layout.members) {
          if (outcome.changes.some((change) => change.field === name)) continue;
          const after = rewritten.layout.members.get(name)!;
          expect(forwarded.slice(after.start, after.end)).toBe(text.slice(span.start, span.end));
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

// Image submissions built to be slow to judge, each of a given size, beside the plain submission of the
// same size they are measured against (bench/stall-budget.ts, test/hostile/bodies.test.ts). A body may
// hold at most MAX_JSON_VALUES values, so the worst accepted shapes fill that count with their costliest
// value and carry the rest of the size in a long `scheduler` string; the refused shapes go past a limit.
import { MAX_JSON_VALUES } from '../src/validation/json-structure.ts';
import { SUBMISSION_BODY } from './request-body.ts';

export interface BodyShape {
  id: string;
  /** What makes it slow, for the report. */
  label: string;
  build(bytes: number): string;
}

/** Values a shape's frame takes: the body, `scheduler`, and the one or two containers around the units. */
const FRAME_VALUES = 4;
const VALUE_ROOM = MAX_JSON_VALUES - FRAME_VALUES;

/** The units, comma-separated: as many as `bytes` and the value room allow, each `valuesPerUnit` values. */
function units(bytes: number, valuesPerUnit: number, unit: (index: number) => string): string {
  const parts: string[] = [];
  let length = 0;
  for (let index = 0; length < bytes && (index + 1) * valuesPerUnit <= VALUE_ROOM; index += 1) {
    const part = unit(index);
    parts.push(part);
    length += part.length + 1;
  }
  return parts.join(',');
}

/** A body of the top-level `members`, padded to `bytes` with a long scheduler name. */
function padded(bytes: number, members: string): string {
  const frame = `{"scheduler":"",${members}}`;
  return `{"scheduler":"${'a'.repeat(Math.max(0, bytes - frame.length))}",${members}}`;
}

/** Arrays inside `input.a` nest 29 deep, which with the body, input and a is the 32 levels allowed. */
const DEEPEST_ACCEPTED_ARRAYS = 29;
const DEEP_UNIT = `${'['.repeat(DEEPEST_ACCEPTED_ARRAYS)}0${']'.repeat(DEEPEST_ACCEPTED_ARRAYS)}`;

/** The benchmark's realistic submission, its prompt lengthened until the body has `bytes` bytes. */
export const PLAIN_SHAPE: BodyShape = {
  id: 'plain',
  label: 'plain submission, long prompt',
  build: (bytes) => {
    const padding = 'a'.repeat(Math.max(0, bytes - SUBMISSION_BODY.length));
    return SUBMISSION_BODY.replace('"a lighthouse', `"${padding}a lighthouse`);
  },
};

export const HOSTILE_SHAPES: readonly BodyShape[] = [
  {
    id: 'deep-nesting',
    label: 'accepted: arrays 32 levels deep',
    build: (bytes) =>
      padded(bytes, `"input":{"a":[${units(bytes, DEEPEST_ACCEPTED_ARRAYS + 1, () => DEEP_UNIT)}]}`),
  },
  {
    id: 'huge-number-judged',
    label: 'refused: a seed of all the digits',
    build: (bytes) => `{"seed":${'9'.repeat(Math.max(1, bytes - 9))}}`,
  },
  {
    id: 'huge-number-passed',
    label: 'accepted: a number of all the digits',
    build: (bytes) => `{"input":{"n":1${'0'.repeat(Math.max(1, bytes - 16))}}}`,
  },
  {
    id: 'many-members',
    label: 'accepted: members in input',
    build: (bytes) => padded(bytes, `"input":{${units(bytes, 1, (index) => `"m${index}":0`)}}`),
  },
  {
    id: 'many-unknown-members',
    label: 'refused: unknown top-level members',
    build: (bytes) =>
      padded(
        bytes,
        units(bytes, 1, (index) => `"m${index}":0`),
      ),
  },
  {
    id: 'escaped-names',
    label: 'accepted: members with escaped names',
    build: (bytes) => padded(bytes, `"input":{${units(bytes, 1, (index) => `"\\u0061${index}":0`)}}`),
  },
  {
    id: 'many-numbers',
    label: 'accepted: exponents in dimensions',
    build: (bytes) => padded(bytes, `"dimensions":{${units(bytes, 1, (index) => `"m${index}":1.5e-7`)}}`),
  },
  {
    id: 'huge-array',
    label: 'accepted: an array of small numbers',
    build: (bytes) => padded(bytes, `"input":{"a":[${units(bytes, 1, () => '0')}]}`),
  },
  {
    id: 'many-objects',
    label: 'accepted: an array of empty objects',
    build: (bytes) => padded(bytes, `"input":{"a":[${units(bytes, 1, () => '{}')}]}`),
  },
  {
    id: 'escaped-string',
    label: 'accepted: a prompt of escaped quotes',
    build: (bytes) =>
      `{"input":{"positivePrompt":"${'\\"'.repeat(Math.max(1, Math.floor((bytes - 32) / 2)))}"}}`,
  },
  {
    id: 'long-model',
    label: 'refused: a model name of all the bytes',
    build: (bytes) => `{"model":"${'a@'.repeat(Math.max(1, Math.floor((bytes - 12) / 2)))}"}`,
  },
  {
    id: 'whitespace',
    label: 'accepted: spaces between the tokens',
    build: (bytes) => `{"samples":${' '.repeat(Math.max(0, bytes - 14))}1}`,
  },
  {
    id: 'too-many-values',
    label: 'refused: an array of all the zeros',
    build: (bytes) => `{"input":{"a":[${'0,'.repeat(Math.max(1, Math.floor((bytes - 18) / 2)))}0]}}`,
  },
];

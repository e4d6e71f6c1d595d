// The structure scan keeps number texts only down to NUMBER_TEXT_DEPTH, through objects: every number a
// schema judges must sit there, or it would be judged on a rounded double.
import { expect, test } from 'vitest';
import { imageRequestSchema, videoRequestSchema } from '../../src/maxai/schemas.ts';
import { NUMBER_TEXT_DEPTH } from '../../src/validation/json-structure.ts';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: unknown;
  exactNumber?: unknown;
}

/** The depth of the object holding each judged number (the body is 1), by path. */
function judgedNumberDepths(node: SchemaNode, path: string[] = []): Record<string, number> {
  expect(node.items).toBeUndefined();
  const depths: Record<string, number> = {};
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    if (child.exactNumber !== undefined) depths[[...path, name].join('.')] = path.length + 1;
    Object.assign(depths, judgedNumberDepths(child, [...path, name]));
  }
  return depths;
}

test.each([
  ['images', imageRequestSchema({ unknownTopLevel: 'reject', guessedRanges: false })],
  ['videos', videoRequestSchema({ unknownTopLevel: 'reject', guessedRanges: false })],
])('every number the %s schema judges sits where its text is kept', (_name, schema) => {
  const depths = judgedNumberDepths(schema as SchemaNode);
  expect(Object.keys(depths).length).toBeGreaterThan(0);
  for (const depth of Object.values(depths)) expect(depth).toBeLessThanOrEqual(NUMBER_TEXT_DEPTH);
});

test('dimensions.outpaint.top is the deepest, at the limit', () => {
  const depths = judgedNumberDepths(
    imageRequestSchema({ unknownTopLevel: 'reject', guessedRanges: false }) as SchemaNode,
  );
  expect(depths['dimensions.outpaint.top']).toBe(NUMBER_TEXT_DEPTH);
});

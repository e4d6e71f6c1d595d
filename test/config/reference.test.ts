// The options reference of docs/configuration.md is generated from src/config/schema.ts: regenerating
// must give the very page committed (how CI fails when a default or a description changes without
// `npm run config:reference`), and every option of the schema must have a description.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import {
  CONFIGURATION_PAGE,
  expectedConfigurationPage,
  undocumentedOptions,
} from '../../scripts/config-reference.ts';

test('the committed reference is exactly what npm run config:reference generates', async () => {
  const committed = readFileSync(new URL(`../../${CONFIGURATION_PAGE}`, import.meta.url), 'utf8');
  expect(committed, `${CONFIGURATION_PAGE}: run npm run config:reference`).toBe(
    await expectedConfigurationPage(),
  );
});

test('every option of the schema has a description', () => {
  expect(undocumentedOptions()).toEqual([]);
});

import { test, expect } from 'vitest';
test('runtime is Node 24', () => {
  expect(process.versions.node.split('.')[0]).toBe('24');
});

// The run secret-canary.test.ts starts on purpose to see it fail: the suite's own setup, on the fixture only.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import suite from '../../../vitest.config.ts';

export default defineConfig({
  root: fileURLToPath(new URL('../../..', import.meta.url)),
  test: {
    include: ['test/support/canary-proof/*.fixture.ts'],
    setupFiles: suite.test?.setupFiles,
  },
});

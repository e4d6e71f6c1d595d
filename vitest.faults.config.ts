import { defineConfig } from 'vitest/config';

// `npm run test:faults` (scripts/test-faults.sh): the fault suite under load. Each file drives hundreds of
// requests a second through real processes, so the files run one at a time, each scenario bounded.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    // The secret canary, as in npm test: a key or token in anything gengate produced fails the test.
    setupFiles: ['test/support/secret-canary-setup.ts', 'test/support/temp-folders-setup.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

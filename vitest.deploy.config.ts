import { defineConfig } from 'vitest/config';

// `npm run test:deploy` (scripts/test-deploy.sh): the image, the chart, the rules and the dashboards'
// proof. They build images and start Prometheus, so they run one file at a time with long bounds.
export default defineConfig({
  test: {
    include: ['test/deploy/**/*.test.ts'],
    // The secret canary, as in npm test: a key or token in anything gengate produced fails the test.
    setupFiles: ['test/support/secret-canary-setup.ts', 'test/support/temp-folders-setup.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
});

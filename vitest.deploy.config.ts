import { defineConfig } from 'vitest/config';

// `npm run test:deploy` (scripts/test-deploy.sh): the image, the chart, the rules and the dashboards'
// proof. They build images and start Prometheus, so they run one file at a time with long bounds.
export default defineConfig({
  test: {
    include: ['test/deploy/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
});

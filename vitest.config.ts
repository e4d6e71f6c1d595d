import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The deployment checks and the fault suite need system tools and run apart: `npm run test:deploy`,
    // `npm run test:faults`.
    exclude: [...configDefaults.exclude, 'test/deploy/**', 'test/faults/**'],
    // Several suites start their own Redis and gateway processes; two cores cannot run many at once.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});

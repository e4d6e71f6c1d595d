import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The deployment checks need system tools and run apart: `npm run test:deploy`.
    exclude: [...configDefaults.exclude, 'test/deploy/**'],
    // The secret canary: a key or token in anything gengate produced fails the test (secret-canary.ts).
    setupFiles: ['test/support/secret-canary-setup.ts'],
    // Several suites start their own Redis and gateway processes; two cores cannot run many at once.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});

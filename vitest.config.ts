import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The deployment checks and the fault suite need system tools and run apart: `npm run test:deploy`,
    // `npm run test:faults`.
    exclude: [...configDefaults.exclude, 'test/deploy/**', 'test/faults/**'],
    // The secret canary: a key or token in anything gengate produced fails the test (secret-canary.ts).
    setupFiles: ['test/support/secret-canary-setup.ts', 'test/support/temp-folders-setup.ts'],
    // Several suites start their own Redis and gateway processes; two cores cannot run many at once.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // `npm test -- --coverage` (CI): V8's coverage of the code the tests load in-process. Code that
    // runs only in the gateway processes some suites spawn is not counted. The floor sits a little
    // below what the suite reaches (89% of statements, 83% of branches, 93% of functions, 90% of
    // lines), so a change that lands untested code fails CI.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts', 'dashboards/src/**/*.ts', 'scripts/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: { statements: 87, branches: 80, functions: 90, lines: 88 },
    },
  },
});

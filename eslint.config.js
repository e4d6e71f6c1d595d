// @ts-check
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['node_modules/', 'coverage/', 'bench/results/', 'dist/'] },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      // Fastify hooks and handlers are async by convention, with or without an await inside.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Messages come from the registry's templates: elsewhere an error is built by gatewayError(name, values).
    files: ['**/*.ts'],
    ignores: ['src/errors/registry.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='GatewayError']",
          message: 'Use gatewayError(name, values) with a named error of src/errors/registry.ts.',
        },
      ],
    },
  },
  {
    // The helm test's script, which node runs in the gengate image (test/deploy/image.test.ts runs it):
    // plain JavaScript outside the TypeScript project, and its output is the test's report.
    files: ['helm/gengate/files/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { console: 'readonly', fetch: 'readonly', process: 'readonly' } },
    rules: { 'no-console': 'off' },
  },
  {
    // The SDK deprecates the classic dashboard model in favour of dashboardv2, which file provisioning,
    // the Grafana chart's sidecar and UI import of most Grafana versions do not read: we keep the classic.
    files: ['dashboards/src/**/*.ts'],
    rules: { '@typescript-eslint/no-deprecated': 'off' },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);

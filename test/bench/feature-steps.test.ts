// `node bench/feature-costs.ts` prices each feature by removing it from the benchmark's configuration,
// one after the other; docs/performance.md quotes what each step saves. Each step must be a
// configuration gengate accepts, and must turn off exactly what its row names, on top of the steps above.
import { stringify } from 'yaml';
import { expect, test } from 'vitest';
import { EVERY_FEATURE, configFor, featureSteps, type BenchFeatures } from '../../bench/gengate.ts';
import { parseConfigText } from '../../src/config/load.ts';

async function gatewayConfigOf(features: BenchFeatures) {
  const config = configFor({
    port: 8080,
    adminPort: 9090,
    upstreamUrl: 'http://127.0.0.1:8081',
    redisUrl: 'redis://127.0.0.1:6379/0',
    key: `ggk_${'a'.repeat(40)}`,
    commandTimeoutMs: undefined,
    features,
  });
  const parsed = await parseConfigText(stringify(config), {
    env: { BENCH_UPSTREAM_TOKEN: 'token', BENCH_WEBHOOK_SECRET: `whsec_${'A'.repeat(43)}=` },
    baseDir: '/',
  });
  const tenant = parsed.tenants[0]!;
  return {
    webhooks: tenant.webhooks.length > 0,
    budgets:
      tenant.budget !== undefined &&
      tenant.jobs?.maxInFlight !== undefined &&
      parsed.upstream.credentials.shared?.maxJobsInFlight !== undefined,
    rateLimits: tenant.limits.length === 2,
    policy: tenant.policy.safetyLevel !== undefined && tenant.policy.models !== undefined,
    requestLog: parsed.logging.level === 'info',
    redisStore: parsed.store.kind === 'redis',
  } satisfies Record<keyof BenchFeatures, boolean>;
}

test('the ladder starts from every feature and removes one more at each step, down to none', async () => {
  const steps = featureSteps();
  expect(steps.map((step) => step.removed)).toEqual([
    undefined,
    'completion webhooks',
    'budgets and caps on jobs in flight',
    'rate limits',
    'the policy rules (the defaults remain)',
    'the request log line',
    'Redis as the store (memory instead)',
  ]);
  expect(steps[0]?.features).toEqual(EVERY_FEATURE);
  const onAtEachStep = await Promise.all(steps.map((step) => gatewayConfigOf(step.features)));
  expect(onAtEachStep).toEqual(steps.map((step) => step.features));
  expect(Object.values(onAtEachStep.at(-1)!).every((on) => !on)).toBe(true);
});

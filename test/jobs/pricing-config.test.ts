// Pricing and budgets in the configuration (docs/budgets.md): a budget needs a price for every create its
// tenant can send, budgets and caps on jobs hold on a Redis Cluster too, and expected costs are exact micro-USD
// integers computed from the validated, policy-adjusted body.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText, type ConfigProblem } from '../../src/config/load.ts';
import { compilePrices, expectedCostMicroUsd, toMicroUsd } from '../../src/usage/pricing.ts';

const HASH = 'a'.repeat(64);
const ENV = { MAXAI_TOKEN: 'token-shared' };

async function problemsOf(text: string): Promise<readonly ConfigProblem[]> {
  const error: unknown = await parseConfigText(text, { env: ENV, baseDir: '/etc/gengate' }).then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error.problems;
}

const tenant = (members: string) => `
tenants:
  - id: team-a
    credential: shared
    keys: [{ sha256: "${HASH}", prefix: ggk_Aaaa }]
    ${members}
`;

describe('configuration', () => {
  it('refuses a budget whose tenant can send an image create that no price matches', async () => {
    const upstream = 'upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }';
    expect(
      await problemsOf(`${upstream}
pricing: { images: [{ model: "vendor@*", usdPerSample: 0.004 }] }
${tenant('budget: { monthlyUsd: 10 }')}`),
    ).toEqual([
      {
        path: 'tenants[0].budget',
        message:
          'an image create without model matches no pricing.images entry; a budget needs a price for every create (add a "*" entry, or narrow policy.models)',
      },
    ]);
    expect(
      await problemsOf(`${upstream}
pricing: { images: [{ model: "vendor@*", usdPerSample: 0.004 }] }
${tenant('budget: { dailyUsd: 1 }\n    policy: { models: { allow: ["vendor@fast-*", "other@x"], allowServiceDefault: false } }')}`),
    ).toEqual([
      {
        path: 'tenants[0].budget',
        message:
          'an image create with a model matching "other@x" matches no pricing.images entry; a budget needs a price for every create (add a "*" entry, or narrow policy.models)',
      },
    ]);
  });

  it('accepts budgets and caps on jobs with a Redis Cluster (the jobs share one hash tag)', async () => {
    const config = await parseConfigText(
      `upstream: { credentials: { shared: { env: MAXAI_TOKEN, maxJobsInFlight: 5 } } }
store: { kind: redis, redis: { nodes: [{ host: 127.0.0.1, port: 7000 }] } }
pricing: { images: [{ model: "*", usdPerSample: 0.01 }] }
${tenant('budget: { monthlyUsd: 10 }\n    jobs: { maxInFlight: 2 }')}`,
      { env: ENV, baseDir: '/etc/gengate' },
    );
    expect(config.tenants[0]).toMatchObject({ budget: { monthlyUsd: 10 }, jobs: { maxInFlight: 2 } });
  });
});

describe('expected cost', () => {
  const prices = compilePrices({
    images: [
      { model: 'vendor@*', usdPerSample: 0.004 },
      { model: '*', usdPerSample: 0.01 },
    ],
    videoUsdPerSecond: { '480p': 0.0062, '720p': 0.014, '1080p': 0.031 },
  });

  it('is samples × the first matching price, "*" also for a request without model', () => {
    expect(expectedCostMicroUsd(prices, 'images.create', { model: 'vendor@a', samples: 3 })).toBe(12_000);
    expect(expectedCostMicroUsd(prices, 'images.create', { model: 'other@b' })).toBe(10_000);
    expect(expectedCostMicroUsd(prices, 'images.create', {})).toBe(10_000);
  });

  it('is duration × the price of the size tier, 480p without size', () => {
    expect(expectedCostMicroUsd(prices, 'videos.create', { duration: 5 })).toBe(31_000);
    const hd = { duration: 10, dimensions: { width: 1920, height: 1088 } };
    expect(expectedCostMicroUsd(prices, 'videos.create', hd)).toBe(310_000);
  });

  it('sums exactly: a budget of 50 × 0.01 holds exactly 50 creates, where doubles hold 49', () => {
    let doubles = 0;
    let admittedAsDoubles = 0;
    while (doubles + 0.01 <= 0.5) {
      doubles += 0.01;
      admittedAsDoubles += 1;
    }
    expect(admittedAsDoubles).toBe(49);
    const cost = expectedCostMicroUsd(prices, 'images.create', {})!;
    expect(Math.floor(toMicroUsd(50 * 0.01) / cost)).toBe(50);
  });
});

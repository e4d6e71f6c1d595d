// docs/reliability.md#configuration-reloads under load: the configuration is replaced every 100 ms (renamed into place, then
// SIGHUP, as a mounted ConfigMap changes and an operator signals) while two replicas serve 300 creates a
// second. Two versions alternate in which the load tenant's samples cap and its limit change together; no
// request fails, and every answer's Gengate-Policy and RateLimit-Policy come from the same version.
import { rename, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { runLoad } from './support/load.ts';
import { createFaultReport } from './support/report.ts';
import { metricValue, startFleet, warmUp, type Fleet } from './support/replicas.ts';

const RATE_PER_SECOND = 300;
const LOAD_MS = 4_000;
const RELOAD_EVERY_MS = 100;
const REQUESTED_SAMPLES = 4;
// Each version: the samples the policy clamps a request to, and the limit that goes with it.
const VERSIONS = [
  { samples: 2, limit: 100_000 },
  { samples: 3, limit: 200_000 },
] as const;

const report = createFaultReport('reload');
let redis: RedisServer;
let fleet: Fleet;

function tenantOfVersion(version: (typeof VERSIONS)[number]): string[] {
  return [
    `policy: { samples: { maximum: ${version.samples}, onViolation: clamp } }`,
    `limits: [{ id: requests, routes: ["*"], cost: requests, limit: ${version.limit}, windowSeconds: 60 }]`,
  ];
}

beforeAll(async () => {
  redis = await startRedisServer();
  fleet = await startFleet(2, {
    store: `{ kind: redis, redis: { url: "${redis.url}" } }`,
    loadTenant: tenantOfVersion(VERSIONS[0]),
    // What is measured is the reload: on a slow CI machine one request of 1,200 waited past the 250 ms
    // at which a replica sheds (test/faults/flood.test.ts is about that).
    server: 'overload: { maxEventLoopDelayMs: 0, maxQueueWaitMs: 0 }',
  });
  await warmUp(fleet);
});

afterAll(async () => {
  report.write();
  await fleet.stop();
  await redis.stop();
});

async function reloadsOf(result: 'success' | 'error'): Promise<number> {
  const counts = await Promise.all(
    fleet.replicas.map((replica) => metricValue(replica, `gengate_config_reloads_total{result="${result}"}`)),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * The version an answer's headers name. An answer may carry no rate-limit headers when the limiter fell
 * back on its per-replica estimate (a store call slower than its timeout on a loaded machine); it then
 * names the policy's version alone. Mixed: both headers present, from different versions.
 */
function versionOf(headers: Record<string, string>): string {
  const clampedTo = /samples=clamped;from=\d+;to=(\d+)/.exec(headers['gengate-policy'] ?? '')?.[1];
  const limit = /"requests";q=(\d+)/.exec(headers['ratelimit-policy'] ?? '')?.[1];
  const byPolicy = VERSIONS.findIndex((version) => String(version.samples) === clampedTo);
  if (limit === undefined) return `version ${byPolicy}, no rate-limit headers`;
  const byLimit = VERSIONS.findIndex((version) => String(version.limit) === limit);
  return byPolicy === byLimit ? `version ${byPolicy}` : `mixed: policy of ${byPolicy}, limit of ${byLimit}`;
}

test('a reload every 100 ms under load: no failed request, no answer from two versions', async () => {
  const urls = fleet.replicas.map((replica) => replica.gatewayUrl);
  const successesBefore = await reloadsOf('success');
  let written = 0;
  const run = await runLoad({
    ratePerSecond: RATE_PER_SECOND,
    durationMs: LOAD_MS,
    next: (index) => ({
      url: `${urls[index % urls.length]!}/v1/images/generations`,
      method: 'POST',
      headers: { authorization: `Bearer ${fleet.keys.load.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { positivePrompt: 'a lighthouse' }, samples: REQUESTED_SAMPLES }),
    }),
    keepHeaders: ['gengate-policy', 'ratelimit-policy', 'ratelimit', 'x-ratelimit-limit'],
    during: async () => {
      const until = performance.now() + LOAD_MS - RELOAD_EVERY_MS;
      while (performance.now() < until) {
        written += 1;
        const next = fleet.configText({ loadTenant: tenantOfVersion(VERSIONS[written % VERSIONS.length]!) });
        // Renamed into place: a reader never sees half a file.
        await writeFile(`${fleet.configPath}.next`, next);
        await rename(`${fleet.configPath}.next`, fleet.configPath);
        for (const replica of fleet.replicas) replica.signal('SIGHUP');
        await new Promise((resolve) => setTimeout(resolve, RELOAD_EVERY_MS));
      }
    },
  });
  const { outcomes } = run;
  const versions: Record<string, number> = {};
  const mixed: Record<string, string>[] = [];
  for (const outcome of outcomes.filter((each) => each.status === 200)) {
    const version = versionOf(outcome.headers);
    versions[version] = (versions[version] ?? 0) + 1;
    if (version.startsWith('mixed')) mixed.push(outcome.headers);
  }
  const reloads = {
    written,
    succeeded: (await reloadsOf('success')) - successesBefore,
    failed: await reloadsOf('error'),
  };
  const finding = report.add('configuration reloaded every 100 ms', run, {
    reloads,
    versions,
    mixedHeaders: mixed.slice(0, 5),
  });
  expect(finding.answers).toEqual({ '200': outcomes.length });
  expect(mixed).toEqual([]);
  expect(Object.keys(versions).filter((version) => !/^version [01]\b/.test(version))).toEqual([]);
  expect(versions['version 0']).toBeGreaterThan(0);
  expect(versions['version 1']).toBeGreaterThan(0);
  expect(reloads.failed).toBe(0);
  // Each replica applied most of what was written (a signal that arrives during a reload shares it).
  expect(reloads.succeeded).toBeGreaterThan(written);
});

// docs/reliability.md#redis-killed-blocked-frozen under load: Redis killed and restarted, blocked by DEBUG SLEEP and frozen by
// SIGSTOP while two replicas serve 300 creates a second, in fail-open and fail-closed modes. Every answer
// is a correct 200 or a clean 503 store_unavailable, none waits past the store timeout plus a margin,
// limits count exactly again one window after recovery, and the ids sent during the outage are neither
// lost nor left claimed: retried, each is replayed or admitted, never refused as "still in progress"
// when it never reached the upstream.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { createLoadAgent, runLoad, sendOne, summarise, type Outcome } from './support/load.ts';
import { createFaultReport } from './support/report.ts';
import {
  imageCreate,
  metricValue,
  PROBE_LIMIT,
  PROBE_WINDOW_SECONDS,
  startFleet,
  type Fleet,
  warmUp,
} from './support/replicas.ts';

const RATE_PER_SECOND = 300;
const LOAD_MS = 4_000;
// Healthy traffic before the fault, so the outage starts with requests and claims in flight.
const FAULT_AFTER_MS = 800;
const OUTAGE_SECONDS = 1.5;
// One request in ten is the probe tenant's, whose small limit the outage must not leave miscounted.
const PROBE_EVERY = 10;
// Twice the default: on two cores shared with the load generator and Redis, a healthy command now and
// then takes over 100 ms, which would count the store down when it is not.
const COMMAND_TIMEOUT_MS = 200;
// What such a machine adds to a request at least; more when the healthy requests before the fault were
// slower than that (then the machine, not the store, is what they waited for).
const MARGIN_MS = 400;
// Answers sent during the outage that are retried afterwards, besides every one refused.
const RETRIED_SUCCESSES = 50;
const RETRY_HEADERS = ['idempotent-replayed', 'x-ratelimit-remaining'];

const report = createFaultReport('redis');
afterAll(() => {
  report.write();
});

type Fault = 'killed and restarted' | 'DEBUG SLEEP' | 'SIGSTOP';
const FAULTS: Fault[] = ['killed and restarted', 'DEBUG SLEEP', 'SIGSTOP'];

const waitForSeconds = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1_000));

async function storeDegradedEverywhere(fleet: Fleet, degraded: boolean): Promise<boolean> {
  const values = await Promise.all(
    fleet.replicas.map((replica) => metricValue(replica, 'gengate_store_degraded')),
  );
  return values.every((value) => value === (degraded ? 1 : 0));
}

/** Plays the fault; resolves once Redis answers again. The outage itself lasts a fixed time, by design. */
async function playFault(fault: Fault, redis: RedisServer, fleet: Fleet): Promise<void> {
  if (fault === 'DEBUG SLEEP') {
    await redis.sleep(OUTAGE_SECONDS);
    return;
  }
  if (fault === 'killed and restarted') await redis.kill();
  else redis.freeze();
  // Long enough that both replicas see it (the breaker opens), then as long again as the sleep's outage.
  await waitFor('both replicas to see the store down', () => storeDegradedEverywhere(fleet, true));
  await waitForSeconds(OUTAGE_SECONDS);
  if (fault === 'killed and restarted') await redis.restart();
  else redis.thaw();
}

function isCorrectCreate(outcome: Outcome): boolean {
  if (outcome.status !== 200) return false;
  const parsed = JSON.parse(outcome.body) as { data?: { requestId?: unknown } };
  return parsed.data?.requestId === outcome.tag;
}

function forwardedTimes(fleet: Fleet, requestId: string): number {
  return fleet.simulator.received.filter(
    (received) => received.method === 'POST' && received.body.toString('utf8').includes(requestId),
  ).length;
}

describe.each(['open', 'closed'] as const)('fail-%s', (failMode) => {
  let redis: RedisServer;
  let fleet: Fleet;
  beforeAll(async () => {
    redis = await startRedisServer();
    fleet = await startFleet(2, {
      store: `{ kind: redis, failMode: ${failMode}, replicas: 2, redis: { url: "${redis.url}", commandTimeoutMs: ${COMMAND_TIMEOUT_MS} } }`,
    });
    await warmUp(fleet);
  });
  afterAll(async () => {
    await fleet.stop();
    await redis.stop();
  });

  test.each(FAULTS)('Redis %s under load', async (fault) => {
    fleet.simulator.clearReceived();
    const replicaUrls = fleet.replicas.map((replica) => replica.gatewayUrl);
    const probeIds = new Set<string>();
    const loadStartedAt = performance.now();
    let redisBackAtMs = Number.NaN;
    let replicasBackAtMs = Number.NaN;
    const run = await runLoad({
      ratePerSecond: RATE_PER_SECOND,
      durationMs: LOAD_MS,
      next: (index) => {
        const replicaUrl = replicaUrls[index % replicaUrls.length]!;
        if (index % PROBE_EVERY !== 0) return imageCreate(replicaUrl, fleet.keys.load);
        const request = imageCreate(replicaUrl, fleet.keys.probe);
        probeIds.add(request.tag!);
        return request;
      },
      during: async () => {
        await waitForSeconds(FAULT_AFTER_MS / 1_000);
        await playFault(fault, redis, fleet);
        redisBackAtMs = performance.now() - loadStartedAt;
        await waitFor('both replicas to use the store again', () => storeDegradedEverywhere(fleet, false));
        replicasBackAtMs = performance.now() - loadStartedAt;
      },
    });
    const { outcomes } = run;
    const loadEndedAt = performance.now();

    // Retry what the outage touched: every refused id, and some that were served meanwhile (the load
    // tenant's: the probe's retries would meet its exhausted limit).
    const loadOutcomes = outcomes.filter((outcome) => !probeIds.has(outcome.tag!));
    const refused = loadOutcomes.filter((outcome) => outcome.errorCode === 'store_unavailable');
    const servedDuringOutage = loadOutcomes
      .filter((outcome) => outcome.status === 200 && outcome.sentAtMs >= FAULT_AFTER_MS)
      .slice(0, RETRIED_SUCCESSES);
    const retried = [...refused, ...servedDuringOutage];
    const forwardedBefore = retried.map((original) => forwardedTimes(fleet, original.tag!));
    // At the load's rate: a burst of hundreds at once would be an overload test of its own.
    const { outcomes: retryOutcomes } = await runLoad({
      ratePerSecond: RATE_PER_SECOND,
      durationMs: (retried.length * 1_000) / RATE_PER_SECOND,
      next: (index) =>
        imageCreate(replicaUrls[index % replicaUrls.length]!, fleet.keys.load, retried[index]!.tag),
      keepHeaders: RETRY_HEADERS,
    });
    const retries = retryOutcomes.map((retry, index) => ({
      original: retried[index]!,
      retry,
      forwardedBefore: forwardedBefore[index]!,
    }));
    const staleConflicts = retries.filter(
      ({ retry, forwardedBefore }) => retry.status === 409 && forwardedBefore === 0,
    );
    const retryAnswers = {
      replayed: retries.filter(({ retry }) => retry.headers['idempotent-replayed'] === 'true').length,
      admitted: retries.filter(
        ({ retry }) => retry.status === 200 && retry.headers['idempotent-replayed'] === undefined,
      ).length,
      refusedByTheUpstreamAsRepeat: retries.filter(
        ({ retry, forwardedBefore }) => retry.status === 409 && forwardedBefore > 0,
      ).length,
      staleConflicts: staleConflicts.length,
      // Ids the upstream had already received and received again: their records did not survive.
      forwardedAgain: retries.filter(
        ({ original, forwardedBefore }) =>
          forwardedBefore > 0 && forwardedTimes(fleet, original.tag!) > forwardedBefore,
      ).length,
      other: summarise(
        retries.filter(({ retry }) => retry.status !== 200 && retry.status !== 409).map(({ retry }) => retry),
      ).answers,
    };

    // One window after its last request of the load (the store was back by then), the probe's limit is
    // whole again and counted exactly across replicas: nothing the outage did is left in the counters.
    const oneWindowAfterLoad = loadEndedAt + PROBE_WINDOW_SECONDS * 1_000;
    await waitFor(
      'one window after the load',
      () => performance.now() >= oneWindowAfterLoad,
      PROBE_WINDOW_SECONDS * 2_000,
    );
    const probeAgent = createLoadAgent();
    const burst = await Promise.all(
      Array.from({ length: PROBE_LIMIT + 2 }, (_, index) =>
        sendOne(
          probeAgent,
          imageCreate(replicaUrls[index % replicaUrls.length]!, fleet.keys.probe, randomUUID()),
          ['x-ratelimit-remaining'],
          performance.now(),
        ),
      ),
    );
    await probeAgent.close();

    // No request waits past the store timeout plus what a request took before the fault, on this machine
    // at this moment, plus the generator's own stalls.
    const healthyMaxMs = Math.max(
      MARGIN_MS,
      ...outcomes.filter((outcome) => outcome.sentAtMs < FAULT_AFTER_MS).map((outcome) => outcome.latencyMs),
    );
    const latencyBoundMs = Math.round(COMMAND_TIMEOUT_MS + healthyMaxMs);
    const finding = report.add(`fail-${failMode}, Redis ${fault}`, run, {
      latencyBoundMs,
      faultAtMs: FAULT_AFTER_MS,
      redisBackAtMs: Math.round(redisBackAtMs),
      // When both replicas reported the store usable again (polled every 10 ms).
      replicasBackAtMs: Math.round(replicasBackAtMs),
      retriedAfterRecovery: retries.length,
      retryAnswers,
      probeBurstAfterOneWindow: burst.map((outcome) => outcome.status),
    });
    // The probe's limit is exceeded on purpose: 429 rate_limited is a correct answer for it alone.
    const allowed = failMode === 'closed' ? ['200', '503 store_unavailable'] : ['200'];
    expect(
      Object.keys(summarise(loadOutcomes).answers).filter((answer) => !allowed.includes(answer)),
    ).toEqual([]);
    const probeAllowed = [...allowed, '429 rate_limited'];
    const probeAnswers = summarise(outcomes.filter((outcome) => probeIds.has(outcome.tag!))).answers;
    expect(Object.keys(probeAnswers).filter((answer) => !probeAllowed.includes(answer))).toEqual([]);
    for (const outcome of outcomes.filter((each) => each.status === 200)) {
      expect(isCorrectCreate(outcome)).toBe(true);
    }
    expect(finding.maxMs).toBeLessThan(latencyBoundMs + finding.generatorMaxStallMs);
    expect(staleConflicts.map(({ original }) => original.tag)).toEqual([]);
    for (const { original, retry } of retries.filter(({ original }) => original.status === 503)) {
      expect({ id: original.tag, status: retry.status }).toEqual({ id: original.tag, status: 200 });
    }
    expect(burst.filter((outcome) => outcome.status === 200)).toHaveLength(PROBE_LIMIT);
    expect(
      burst
        .filter((outcome) => outcome.status === 200)
        .map((outcome) => Number(outcome.headers['x-ratelimit-remaining']))
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: PROBE_LIMIT }, (_, index) => index));
  });
});

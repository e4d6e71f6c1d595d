// A tenant's own view of a job's end settles it (docs/budgets.md): its poll showing the end, or its DELETE
// of a video (a cancel, unless its answer shows the video had already ended), with no extra upstream call. The harness's tracker polls only after an hour, so every end
// here is the tenant's observation.
import { expect, test } from 'vitest';
import { startGatewayHarness, useGatewayHarness } from '../support/gateway-harness.ts';

const harness = useGatewayHarness();

async function call(method: string, path: string, body?: string) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${harness.keys.alpha}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { data: Record<string, unknown> };
}

const jobsInFlight = async () => (await call('GET', '/v1/account/usage')).data.jobsInFlight;

test("a tenant's poll that shows the end settles the job; so does a DELETE's answer, by what it shows", async () => {
  const image = (await call('POST', '/v1/images/generations', '{}')).data.requestId as string;
  const video = (await call('POST', '/v1/videos/generations', '{"duration": 5}')).data.requestId as string;
  expect(await jobsInFlight()).toBe(2);
  harness.simulator.clearReceived();

  const imageCost = (await call('GET', `/v1/images/generations/${image}`)).data.totalCost as number;
  expect(await jobsInFlight()).toBe(1);
  // The simulator ends every job at once here: the video had completed, and its DELETE changes nothing
  // and answers its record. Regression: a DELETE was settled as a cancel whatever its answer showed, so
  // a tenant deleting its finished videos was refunded what they cost.
  const deleted = (await call('DELETE', `/v1/videos/generations/${video}`)).data;
  expect(deleted).toMatchObject({ completedAt: expect.any(String) as unknown, cancelledAt: null });
  expect(await jobsInFlight()).toBe(0);
  // Only the tenant's own two requests reached the upstream.
  expect(harness.simulator.received.map((entry) => `${entry.method} ${entry.url}`)).toEqual([
    `GET /v1/images/generations/${image}`,
    `DELETE /v1/videos/generations/${video}`,
  ]);
  const metrics = await harness.metrics.registry.metrics();
  expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="completed"} 2');
  expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="cancelled"} 0');
  const { lifetime } = (await call('GET', '/v1/account/usage')).data as {
    lifetime: { reportedCostUsd: number };
  };
  expect(lifetime.reportedCostUsd).toBe(
    (Math.round(imageCost * 1e6) + Math.round((deleted.totalCost as number) * 1e6)) / 1e6,
  );
});

test('a DELETE of a video still running cancels it: its reservation is refunded', async () => {
  const running = await startGatewayHarness({ simulatorProcessingMs: 600_000 });
  try {
    const send = (method: string, path: string, body?: string) =>
      fetch(`${running.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${running.keys.alpha}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
      }).then(async (response) => {
        expect(response.status).toBe(200);
        return ((await response.json()) as { data: Record<string, unknown> }).data;
      });
    const video = (await send('POST', '/v1/videos/generations', '{"duration": 5}')).requestId as string;
    expect((await send('GET', '/v1/account/usage')).jobsInFlight).toBe(1);
    expect(await send('DELETE', `/v1/videos/generations/${video}`)).toMatchObject({
      cancelledAt: expect.any(String) as unknown,
    });
    expect((await send('GET', '/v1/account/usage')).jobsInFlight).toBe(0);
    const metrics = await running.metrics.registry.metrics();
    expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="cancelled"} 1');
    expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="completed"} 0');
  } finally {
    await running.close();
  }
});

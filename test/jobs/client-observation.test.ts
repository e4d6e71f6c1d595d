// A tenant's own view of a job's end settles it (docs/budgets.md): its poll showing the end, or its DELETE
// of a video, with no extra upstream call. The harness's tracker polls only after an hour, so every end
// here is the tenant's observation.
import { expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';

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

test("a tenant's poll that shows the end settles the job; a DELETE cancels one", async () => {
  const image = (await call('POST', '/v1/images/generations', '{}')).data.requestId as string;
  const video = (await call('POST', '/v1/videos/generations', '{"duration": 5}')).data.requestId as string;
  expect(await jobsInFlight()).toBe(2);
  harness.simulator.clearReceived();

  await call('GET', `/v1/images/generations/${image}`);
  expect(await jobsInFlight()).toBe(1);
  await call('DELETE', `/v1/videos/generations/${video}`);
  expect(await jobsInFlight()).toBe(0);
  // Only the tenant's own two requests reached the upstream.
  expect(harness.simulator.received.map((entry) => `${entry.method} ${entry.url}`)).toEqual([
    `GET /v1/images/generations/${image}`,
    `DELETE /v1/videos/generations/${video}`,
  ]);
  const metrics = await harness.metrics.registry.metrics();
  expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="completed"} 1');
  expect(metrics).toContain('gengate_jobs_finished_total{tenant="alpha",outcome="cancelled"} 1');
});

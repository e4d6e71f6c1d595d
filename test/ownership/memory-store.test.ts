// docs/ownership.md#creates with store.kind memory, through the gateway's HTTP surface: every create gets a
// requestId, a repeat by its owner is replayed (not forwarded, not charged), and no tenant reaches another
// tenant's request, even when both share one upstream credential.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, useGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { waitFor } from '../support/wait-for.ts';
import {
  callRequest,
  createImage,
  createVideo,
  inUse,
  notFound,
  pending,
  receivedCreates,
  submission,
} from './ownership-client.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
// 10 requests per 60 s: each one takes 6 s of room.
const LIMITS = "[{ id: requests, routes: ['*'], cost: requests, limit: 10, windowSeconds: 60 }]";

const harness = useGatewayHarness({ alphaLimitsYaml: LIMITS });

describe('requestId of a create', () => {
  test('assigned when absent: forwarded appended to the body, and answered to the client', async () => {
    const created = await createImage(harness, 'gamma', { samples: 1, requestId: null, seed: 7 });
    expect(created.status).toBe(200);
    const requestId = (created.body as { data: { requestId: string } }).data.requestId;
    expect(requestId).toMatch(UUID_V4);
    expect(created.body).toEqual(submission(requestId));
    expect(receivedCreates(harness)).toEqual([
      { url: '/v1/images/generations', body: `{"samples":1,"requestId":"${requestId}","seed":7}` },
    ]);

    const appended = await createImage(harness, 'gamma', { samples: 1 });
    const appendedId = (appended.body as { data: { requestId: string } }).data.requestId;
    expect(receivedCreates(harness)[1]).toEqual({
      url: '/v1/images/generations',
      body: `{"samples":1,"requestId":"${appendedId}"}`,
    });
    expect((await callRequest(harness, 'gamma', 'GET', `/v1/images/generations/${appendedId}`)).status).toBe(
      200,
    );
  });

  test('the owner repeating it gets the original answer, replayed, forwarded and charged once', async () => {
    const requestId = randomUUID();
    const startedMs = Date.now();
    const first = await createImage(harness, 'alpha', { requestId, samples: 1 });
    expect(first.status).toBe(200);
    expect(first.body).toEqual(submission(requestId));
    expect(first.headers.get('ratelimit')).toBe('"requests";r=9;t=6');
    // A later answer counts down from the first charge: its `t` is up to the whole seconds since then less.
    const expectRateLimit = (header: string | null, remaining: number, fullInSeconds: number) => {
      const match = /^"requests";r=(\d+);t=(\d+)$/.exec(header ?? '');
      expect(match?.[1], header ?? 'no RateLimit').toBe(String(remaining));
      const elapsedSeconds = Math.ceil((Date.now() - startedMs) / 1000);
      expect(Number(match?.[2])).toBeGreaterThanOrEqual(fullInSeconds - elapsedSeconds);
      expect(Number(match?.[2])).toBeLessThanOrEqual(fullInSeconds);
    };
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const repeat = await createImage(harness, 'alpha', { requestId, samples: 1 });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(submission(requestId));
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.headers.get('content-type')).toBe(first.headers.get('content-type'));
    // Not charged: the limit still has the room the first create left.
    expectRateLimit(repeat.headers.get('ratelimit'), 9, 6);
    expect(receivedCreates(harness)).toHaveLength(1);

    const next = await createImage(harness, 'alpha', { samples: 1 });
    expectRateLimit(next.headers.get('ratelimit'), 8, 12);
  });

  test('another tenant on the same upstream credential using it: 409, not forwarded', async () => {
    const requestId = randomUUID();
    expect((await createImage(harness, 'gamma', { requestId })).status).toBe(200);
    const conflict = await createImage(harness, 'alpha', { requestId });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual(inUse(requestId));
    // The service's ids are case-insensitive, so another spelling is the same id.
    const upper = requestId.toUpperCase();
    expect((await createVideo(harness, 'alpha', { requestId: upper, duration: 2 })).body).toEqual(
      inUse(upper),
    );
    expect(receivedCreates(harness)).toHaveLength(1);
  });

  test('an upstream 4xx releases the claim: the same id can be submitted again', async () => {
    const requestId = randomUUID();
    // The simulator refuses widths over 2048; the gateway checks only the type.
    const refused = await createImage(harness, 'gamma', {
      requestId,
      dimensions: { width: 4096, height: 512 },
    });
    expect(refused.status).toBe(400);
    const retried = await createImage(harness, 'gamma', { requestId });
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(submission(requestId));
    expect(receivedCreates(harness)).toHaveLength(2);
  });

  test('a repeat while the first is in flight: 409, then the replay once it was answered', async () => {
    const requestId = randomUUID();
    harness.simulator.faults.set({ delayMs: 300, times: 1 });
    const first = createImage(harness, 'gamma', { requestId });
    await waitFor('the first create upstream', () => receivedCreates(harness).length === 1);
    const during = await createImage(harness, 'gamma', { requestId });
    expect(during.status).toBe(409);
    expect(during.body).toEqual(pending(requestId));
    expect((await first).body).toEqual(submission(requestId));
    const after = await createImage(harness, 'gamma', { requestId });
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(after.body).toEqual(submission(requestId));
    expect(receivedCreates(harness)).toHaveLength(1);
  });

  test('an unknown upstream outcome (502) keeps the claim: the owner may poll, nobody may reuse it', async () => {
    const requestId = randomUUID();
    harness.simulator.faults.set({ dropConnection: true, times: 1 });
    expect((await createImage(harness, 'gamma', { requestId })).status).toBe(502);
    expect((await createImage(harness, 'gamma', { requestId })).body).toEqual(pending(requestId));
    expect((await createImage(harness, 'alpha', { requestId })).body).toEqual(inUse(requestId));
    const poll = await callRequest(harness, 'gamma', 'GET', `/v1/images/generations/${requestId}`);
    // Forwarded: the simulator never stored the job, and answers so itself.
    expect(poll.status).toBe(404);
    expect(harness.simulator.received.map((request) => request.method)).toEqual(['POST', 'GET']);
  });
});

describe('GET and DELETE of a request id', () => {
  test("another tenant's request on the same credential: 404, nothing forwarded", async () => {
    const created = await createVideo(harness, 'alpha', { duration: 2 });
    const requestId = (created.body as { data: { requestId: string } }).data.requestId;
    harness.simulator.clearReceived();
    for (const [method, path] of [
      ['GET', `/v1/videos/generations/${requestId}`],
      ['DELETE', `/v1/videos/generations/${requestId}`],
      ['GET', `/v1/images/generations/${requestId}`],
    ] as const) {
      const refused = await callRequest(harness, 'gamma', method, path);
      expect(refused.status).toBe(404);
      expect(refused.body).toEqual(notFound(requestId));
    }
    expect(harness.simulator.received).toEqual([]);

    const own = await callRequest(harness, 'alpha', 'DELETE', `/v1/videos/generations/${requestId}`);
    expect(own.status).toBe(200);
    expect(harness.simulator.received).toHaveLength(1);
  });

  test('an unknown id: 404, nothing forwarded, nothing charged', async () => {
    const requestId = randomUUID();
    const before = await createImage(harness, 'alpha', { samples: 1 });
    const unknown = await callRequest(harness, 'alpha', 'GET', `/v1/images/generations/${requestId}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(notFound(requestId));
    expect(harness.simulator.received.map((request) => request.method)).toEqual(['POST']);
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));
    // The refusal shows the limits as they stand: nothing was taken for it.
    expect(unknown.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
    const after = await createImage(harness, 'alpha', { samples: 1 });
    expect(after.headers.get('x-ratelimit-remaining')).toBe(String(remaining - 1));
  });
});

describe('a create refused by rate limits', () => {
  let limited: GatewayHarness;
  beforeAll(async () => {
    limited = await startGatewayHarness({
      alphaLimitsYaml: "[{ id: requests, routes: ['*'], cost: requests, limit: 1, windowSeconds: 3600 }]",
    });
  });
  afterAll(async () => {
    await limited.close();
  });

  test('releases its claim: the id stays free', async () => {
    expect((await createImage(limited, 'alpha', {})).status).toBe(200);
    const requestId = randomUUID();
    expect((await createImage(limited, 'alpha', { requestId })).status).toBe(429);
    const reused = await createImage(limited, 'gamma', { requestId });
    expect(reused.status).toBe(200);
    expect(reused.body).toEqual(submission(requestId));
  });
});

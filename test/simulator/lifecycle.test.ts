// A job's life as the GET record shows it: queued, processing, completed (or failed, or cancelled), with
// the documented timestamps, echo, results and costs. The clock is injected, so every instant is exact.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { parseJsonLossless } from '../../src/simulator/lossless-json.ts';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { AUTH, call, postImage, postVideo, startTestSimulator } from './simulator-client.ts';

const START = Date.parse('2026-03-10T12:00:00.000Z');
const QUEUED_MS = 1_000;
const PROCESSING_MS = 2_000;
let now = START;
let simulator: SimulatorServer;

beforeAll(async () => {
  simulator = await startTestSimulator({
    clock: () => now,
    queuedMs: QUEUED_MS,
    processingMs: PROCESSING_MS,
  });
});
afterAll(async () => {
  await simulator.close();
});
beforeEach(() => {
  simulator.faults.clear();
});

const iso = (offsetMs: number) => new Date(START + offsetMs).toISOString();
type Record = { [key: string]: unknown; results: { [key: string]: unknown }[] };

async function poll(kind: 'images' | 'videos', id: string, auth = AUTH.alpha) {
  const answer = await call(simulator, 'GET', `/v1/${kind}/generations/${id}`, { auth });
  return answer;
}

async function record(kind: 'images' | 'videos', id: string): Promise<Record> {
  const answer = await poll(kind, id);
  expect(answer.status).toBe(200);
  return (answer.body as { data: Record }).data;
}

describe('an image job', () => {
  test('queued, processing, then completed, with the echo and the documented timestamps', async () => {
    now = START;
    const requestId = randomUUID();
    const created = await call(simulator, 'POST', '/v1/images/generations', {
      body: `{"requestId":"${requestId}","seed":9223372036854775807,"samples":2,"steps":50,"CFGScale":7.5,"dimensions":{"width":2048,"height":1024},"input":{"positivePrompt":"a fox"},"unknownField":1}`,
    });
    expect(created.body).toEqual({ status: 200, data: { requestId } });

    const queued = await record('images', requestId);
    expect(queued).toEqual({
      id: requestId,
      userId: 'user_alpha',
      status: 'queued',
      statusReason: null,
      model: null,
      safetyLevel: 'medium',
      scanResults: null,
      input: { positivePrompt: 'a fox' },
      outputQuality: 95,
      outputType: ['url'],
      samples: 2,
      cfgScale: 7.5,
      steps: 50,
      seed: 9223372036854775807n,
      scheduler: null,
      advancedFeatures: null,
      dimensions: { width: 2048, height: 1024 },
      queuedAt: iso(0),
      startedAt: null,
      completedAt: null,
      cancelledAt: null,
      createdAt: iso(0),
      updatedAt: iso(0),
      results: [],
      totalCost: null,
    });

    now = START + QUEUED_MS;
    expect(await record('images', requestId)).toMatchObject({
      status: 'processing',
      startedAt: iso(QUEUED_MS),
      completedAt: null,
      updatedAt: iso(QUEUED_MS),
      results: [],
      totalCost: null,
    });

    now = START + QUEUED_MS + PROCESSING_MS;
    const done = await record('images', requestId);
    // 2048x1024 is 2.097152 MP; 0.002 USD per MP at 25 steps, doubled for 50 steps.
    const cost = 0.008389;
    expect(done).toMatchObject({
      status: 'completed',
      statusReason: null,
      startedAt: iso(QUEUED_MS),
      completedAt: iso(QUEUED_MS + PROCESSING_MS),
      updatedAt: iso(QUEUED_MS + PROCESSING_MS),
      totalCost: 0.016778,
    });
    expect(done.results).toEqual([
      {
        cost,
        isNSFW: false,
        url: expect.stringMatching(new RegExp(`^${simulator.url}/files/[0-9a-f-]{36}/0\\.png$`)) as unknown,
      },
      {
        cost,
        isNSFW: false,
        url: expect.stringMatching(new RegExp(`^${simulator.url}/files/[0-9a-f-]{36}/1\\.png$`)) as unknown,
      },
    ]);
  });

  test('the seed keeps every digit in the raw JSON of the record', async () => {
    now = START;
    const requestId = randomUUID();
    await call(simulator, 'POST', '/v1/images/generations', {
      body: `{"requestId":"${requestId}","seed":9223372036854775806}`,
    });
    const response = await fetch(`${simulator.url}/v1/images/generations/${requestId}`, {
      headers: { authorization: AUTH.alpha },
    });
    expect(await response.text()).toContain('"seed":9223372036854775806,');
  });

  test('a requestId the service assigns is a lower-case UUID v4, and an upper-case id is found in any case', async () => {
    now = START;
    const assigned = await postImage(simulator, {});
    const { requestId } = (assigned.body as { data: { requestId: string } }).data;
    expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const upper = randomUUID().toUpperCase();
    expect((await postImage(simulator, { requestId: upper })).body).toEqual({
      status: 200,
      data: { requestId: upper.toLowerCase() },
    });
    expect((await poll('images', upper)).status).toBe(200);
  });

  test.each([
    ['base64', (value: string) => Buffer.from(value, 'base64')],
    ['dataURI', (value: string) => Buffer.from(value.replace(/^data:image\/png;base64,/, ''), 'base64')],
  ] as const)('outputType %s carries the PNG itself', async (outputType, decode) => {
    now = START + QUEUED_MS + PROCESSING_MS;
    const requestId = randomUUID();
    await postImage(simulator, { requestId, outputType, seed: 7 });
    now += QUEUED_MS + PROCESSING_MS;
    const done = await record('images', requestId);
    expect(done.outputType).toEqual([outputType]);
    const [result] = done.results;
    expect(Object.keys(result!)).toEqual(['cost', 'isNSFW', outputType]);
    const png = decode(result![outputType] as string);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    if (outputType === 'dataURI') expect(result!.dataURI).toMatch(/^data:image\/png;base64,/);
  });

  test('the failJob fault makes the next created job fail, with a reason and no results', async () => {
    now = START;
    simulator.faults.set({ failJob: true, times: 1 });
    const requestId = randomUUID();
    await postImage(simulator, { requestId });
    now = START + QUEUED_MS + PROCESSING_MS;
    expect(await record('images', requestId)).toMatchObject({
      status: 'failed',
      statusReason: 'generation failed (simulated by the failJob fault)',
      completedAt: iso(QUEUED_MS + PROCESSING_MS),
      results: [],
      totalCost: 0,
    });
    const next = randomUUID();
    await postImage(simulator, { requestId: next });
    now += QUEUED_MS + PROCESSING_MS;
    expect((await record('images', next)).status).toBe('completed');
  });
});

describe('ownership and reuse', () => {
  test('a requestId reused by the same account: 409', async () => {
    const requestId = randomUUID();
    await postImage(simulator, { requestId });
    expect((await postImage(simulator, { requestId })).body).toEqual({
      status: 409,
      error: {
        code: 'request_id_conflict',
        type: 'conflict_error',
        message: 'this requestId has already been used',
        param: 'requestId',
      },
    });
  });

  test("an unknown id, another account's id, or an image id on the video route: 404", async () => {
    const requestId = randomUUID();
    await postImage(simulator, { requestId });
    const notFound = {
      status: 404,
      error: { code: 'request_not_found', type: 'not_found_error', message: 'no request with this id' },
    };
    expect((await poll('images', randomUUID())).body).toEqual(notFound);
    const other = await poll('images', requestId, AUTH.beta);
    expect(other.status).toBe(404);
    expect(other.body).toEqual(notFound);
    expect((await poll('videos', requestId)).body).toEqual(notFound);
  });
});

describe('a video job', () => {
  test('one url result priced by tier, isNSFW null, safetyLevel forced to high', async () => {
    now = START;
    const requestId = randomUUID();
    await postVideo(simulator, {
      requestId,
      duration: 5,
      safetyLevel: 'low',
      dimensions: { width: 1920, height: 1088 },
    });
    now = START + QUEUED_MS + PROCESSING_MS;
    const done = await record('videos', requestId);
    expect(done).toMatchObject({
      status: 'completed',
      safetyLevel: 'high',
      outputType: ['url'],
      duration: 5,
      dimensions: { width: 1920, height: 1088 },
      totalCost: 0.155,
    });
    expect(done.results).toEqual([
      { cost: 0.155, isNSFW: null, url: expect.stringMatching(/\/files\/.+\/0\.png$/) as unknown },
    ]);
  });

  test('DELETE cancels a queued job; the record freezes with cancelledAt', async () => {
    now = START;
    const requestId = randomUUID();
    await postVideo(simulator, { requestId, duration: 4 });
    now = START + 500;
    const cancelled = await call(simulator, 'DELETE', `/v1/videos/generations/${requestId}`);
    expect(cancelled.status).toBe(200);
    const expected = {
      status: 'cancelled',
      statusReason: 'cancelled at the client’s request',
      startedAt: null,
      completedAt: null,
      cancelledAt: iso(500),
      updatedAt: iso(500),
      results: [],
      totalCost: 0,
    };
    expect((cancelled.body as { data: unknown }).data).toMatchObject(expected);
    now = START + 60_000;
    expect(await record('videos', requestId)).toMatchObject(expected);
  });

  test('DELETE cancels a processing job', async () => {
    now = START;
    const requestId = randomUUID();
    await postVideo(simulator, { requestId, duration: 4 });
    now = START + QUEUED_MS + 10;
    await call(simulator, 'DELETE', `/v1/videos/generations/${requestId}`);
    now = START + 60_000;
    expect(await record('videos', requestId)).toMatchObject({
      status: 'cancelled',
      startedAt: iso(QUEUED_MS),
      completedAt: null,
      cancelledAt: iso(QUEUED_MS + 10),
    });
  });

  test('DELETE of a finished job changes nothing and answers its record', async () => {
    now = START;
    const requestId = randomUUID();
    await postVideo(simulator, { requestId, duration: 4 });
    now = START + QUEUED_MS + PROCESSING_MS;
    const before = await record('videos', requestId);
    now += 5_000;
    const deleted = await call(simulator, 'DELETE', `/v1/videos/generations/${requestId}`);
    expect(deleted.status).toBe(200);
    expect((deleted.body as { data: unknown }).data).toEqual(before);
  });

  test('DELETE of an unknown id: 404', async () => {
    expect((await call(simulator, 'DELETE', `/v1/videos/generations/${randomUUID()}`)).status).toBe(404);
  });
});

describe('account views', () => {
  test('usage counts only the calling account, this month', async () => {
    const fresh = await startTestSimulator({ clock: () => now, queuedMs: 0, processingMs: 0 });
    try {
      now = START;
      await postImage(fresh, { samples: 3, steps: 25, dimensions: { width: 1000, height: 1000 } });
      await postVideo(fresh, { duration: 6, dimensions: { width: 960, height: 960 } });
      await postImage(fresh, {}, AUTH.beta);
      const expected = {
        status: 200,
        data: {
          userId: 'user_alpha',
          period: { start: '2026-03-01T00:00:00.000Z', end: '2026-04-01T00:00:00.000Z' },
          requests: 3,
          images: 3,
          videoSeconds: 6,
          // 3 x 0.002 (1 MP, 25 steps) + 6 s x 0.014 (720p)
          totalCost: 0.09,
          balance: 99.91,
          currency: 'USD',
        },
      };
      expect((await call(fresh, 'GET', '/v1/account/usage')).body).toEqual(expected);
      const legacy = await call(fresh, 'GET', '/v1/usage');
      expect(legacy.body).toEqual({ ...expected, data: { ...expected.data, requests: 4 } });
      expect(parseJsonLossless(JSON.stringify(legacy.body))).toEqual(legacy.body);
    } finally {
      await fresh.close();
    }
  });

  test('keys: one key in the documented shape, never the whole token', async () => {
    for (const path of ['/v1/account/keys', '/v1/keys']) {
      const answer = await call(simulator, 'GET', path, { auth: AUTH.beta });
      expect(answer.body).toEqual({
        status: 200,
        data: [
          {
            id: expect.stringMatching(/^key_[0-9a-f]{16}$/) as unknown,
            userId: 'user_beta',
            partialKey: 'sim_test…',
            name: 'beta key',
            permissions: ['images', 'videos', 'account'],
            createdAt: iso(0),
            updatedAt: iso(0),
            description: 'simulated upstream key',
            expirationDate: null,
          },
        ],
      });
    }
  });
});

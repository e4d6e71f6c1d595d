// The tenant routes of webhook deliveries, through the real gateway (buildApp on a socket) and the real
// webhook service: a tenant lists its own deliveries and redelivers a dead one; another tenant's delivery
// id is 404 delivery_not_found; the paths are on the allowlist (405 with Allow, 404 for near misses); a
// tenant's limits apply to them as to every route.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createTenantDirectory } from '../../src/auth/tenant-directory.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { openStore } from '../../src/store/open-store.ts';
import { openWebhookQueue } from '../../src/store/webhook-queue.ts';
import type { GatewayStore } from '../../src/store/gateway-store.ts';
import { createUpstreamClient, upstreamClientOptions } from '../../src/upstream/client.ts';
import { openWebhookService, type WebhookService } from '../../src/webhooks/service.ts';
import { canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { SECRET_A, settlement } from './support/service-harness.ts';

let app: FastifyInstance;
let url: string;
let store: GatewayStore;
let webhooks: WebhookService;
let receiver: Receiver;
let receiverStatus = 500;
const alpha = canaryTenantKey();
const beta = canaryTenantKey();
const gamma = canaryTenantKey();

beforeAll(async () => {
  receiver = await startReceiver('127.0.0.1', (_request, response) => {
    response.writeHead(receiverStatus).end();
  });
  const config = await parseConfigText(
    `
upstream: { baseUrl: "http://127.0.0.1:9", credentials: { shared: { env: SHARED_TOKEN } } }
store: { kind: memory }
webhooks:
  allowedDestinations: ["127.0.0.1/32"]
  allowHttp: ["127.0.0.1/32"]
  retry: { firstDelayMs: 50, maxDelayMs: 100, giveUpAfterSeconds: 1 }
tenants:
  - id: alpha
    credential: shared
    keys: [{ sha256: "${alpha.sha256}", prefix: "${alpha.prefix}" }]
    webhooks: [{ id: done, url: "${receiver.origin}/hook", secret: { env: HOOK_SECRET }, events: [job.completed] }]
  - id: beta
    credential: shared
    keys: [{ sha256: "${beta.sha256}", prefix: "${beta.prefix}" }]
  - id: gamma
    credential: shared
    keys: [{ sha256: "${gamma.sha256}", prefix: "${gamma.prefix}" }]
    limits: [{ id: hooks, routes: [webhooks.deliveries, webhooks.redeliver], cost: requests, limit: 3, windowSeconds: 3600 }]
`,
    { env: { SHARED_TOKEN: 'upstream-token', HOOK_SECRET: SECRET_A }, baseDir: process.cwd() },
  );
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics();
  store = await openStore(config.store, { logger, metrics });
  webhooks = await openWebhookService({
    webhooks: config.webhooks,
    openQueue: (step) => openWebhookQueue(config.store, step),
    tenants: config.tenants,
    registry: metrics.registry,
    env: { HOOK_SECRET: SECRET_A },
    baseDir: process.cwd(),
  });
  store.jobEnds.listen((end) => webhooks.onJobEnded(end));
  const tenants = createTenantDirectory(config.tenants);
  const upstream = createUpstreamClient(upstreamClientOptions(config, metrics));
  app = buildApp(config, {
    logger,
    tenants: () => tenants,
    credentials: { get: () => 'upstream-token' },
    metrics,
    upstream,
    store,
    webhooks,
  });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app.close();
  await webhooks.close();
  await store.close();
  await receiver.close();
});

const call = (path: string, key: string, method = 'GET') =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });

it('lists the tenant its own deliveries, redelivers a dead one, and answers another tenant 404', async () => {
  const requestId = randomUUID();
  await store.jobEnds.tell({
    ...settlement('alpha', requestId),
    route: 'images.create',
    endedAt: new Date(),
  });
  await waitFor('the delivery to be dead', async () => (await webhooks.list('alpha', 1))[0]?.dead === true);

  const listed = await call('/v1/gateway/webhook-deliveries', alpha.key);
  expect(listed.status).toBe(200);
  expect(listed.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const body = (await listed.json()) as { status: number; data: { id: string; attempts: number }[] };
  const [dead] = body.data;
  expect(body).toEqual({
    status: 200,
    data: [
      {
        id: dead?.id,
        webhookId: 'done',
        event: 'job.completed',
        requestId,
        attempts: dead?.attempts,
        lastStatus: 500,
        nextAttemptAt: null,
        dead: true,
      },
    ],
  });
  const id = dead?.id ?? '';

  const others = await call('/v1/gateway/webhook-deliveries', beta.key);
  expect(await others.json()).toEqual({ status: 200, data: [] });
  const stolen = await call(`/v1/gateway/webhook-deliveries/${id}/redeliver`, beta.key, 'POST');
  expect(stolen.status).toBe(404);
  expect(await stolen.json()).toEqual({
    status: 404,
    error: {
      code: 'delivery_not_found',
      type: 'not_found_error',
      message: `webhook delivery ${id} was not found`,
    },
  });

  receiverStatus = 204;
  const before = receiver.requests.length;
  const redelivered = await call(`/v1/gateway/webhook-deliveries/${id}/redeliver`, alpha.key, 'POST');
  expect(redelivered.status).toBe(202);
  expect(await redelivered.json()).toEqual({ status: 202, data: { id, queued: true } });
  await waitFor('the redelivery', () => receiver.requests.length >= before + 1);
  expect(receiver.requests.at(-1)?.headers['webhook-id']).toBe(id);
  await waitFor(
    'the list to show it delivered',
    async () => (await webhooks.list('alpha', 1))[0]?.lastStatus === 204,
  );
});

it('is on the allowlist: authentication required, 405 with Allow, near misses 404', async () => {
  const unauthenticated = await fetch(`${url}/v1/gateway/webhook-deliveries`);
  expect(unauthenticated.status).toBe(401);
  expect(((await unauthenticated.json()) as { error: { code: string } }).error.code).toBe('missing_api_key');
  const wrongMethod = await call('/v1/gateway/webhook-deliveries', alpha.key, 'DELETE');
  expect(wrongMethod.status).toBe(405);
  expect(wrongMethod.headers.get('allow')).toBe('GET');
  const getRedeliver = await call(`/v1/gateway/webhook-deliveries/${randomUUID()}/redeliver`, alpha.key);
  expect(getRedeliver.status).toBe(405);
  expect(getRedeliver.headers.get('allow')).toBe('POST');
  for (const path of [
    '/v1/gateway/webhook-deliveries/not-a-uuid/redeliver',
    '/v1/gateway/webhook-deliveries/',
    '/v1/gateway/Webhook-deliveries',
    `/v1/gateway/webhook-deliveries/${randomUUID()}/redeliver/`,
  ]) {
    const response = await call(path, alpha.key, path.endsWith('redeliver') ? 'POST' : 'GET');
    expect([path, response.status]).toEqual([path, 404]);
  }
  const unknown = randomUUID();
  const missing = await call(`/v1/gateway/webhook-deliveries/${unknown}/redeliver`, alpha.key, 'POST');
  expect(missing.status).toBe(404);
  expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('delivery_not_found');
});

it("charges the tenant's limits that name them: headers on every answer, 429 past the limit", async () => {
  const remainingAfter = async (response: Response) => {
    expect(response.headers.get('x-ratelimit-limit')).toBe('3');
    expect(response.headers.get('ratelimit-policy')).toBe('"hooks";q=3;w=3600');
    return response.headers.get('x-ratelimit-remaining');
  };
  const listed = await call('/v1/gateway/webhook-deliveries', gamma.key);
  expect(listed.status).toBe(200);
  expect(await remainingAfter(listed)).toBe('2');
  const missing = await call(`/v1/gateway/webhook-deliveries/${randomUUID()}/redeliver`, gamma.key, 'POST');
  expect(missing.status).toBe(404);
  expect(await remainingAfter(missing)).toBe('1');
  expect(await remainingAfter(await call('/v1/gateway/webhook-deliveries', gamma.key))).toBe('0');

  const refused = await call('/v1/gateway/webhook-deliveries', gamma.key);
  expect(refused.status).toBe(429);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  expect(await remainingAfter(refused)).toBe('0');
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  // A tenant without limits is charged nothing and shown none.
  const unlimited = await call('/v1/gateway/webhook-deliveries', beta.key);
  expect(unlimited.headers.has('x-ratelimit-limit')).toBe(false);
});

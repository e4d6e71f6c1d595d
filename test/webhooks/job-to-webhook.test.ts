// Job → tracker → webhook through the real interfaces: two gateway processes (src/main.ts) share one real
// Redis and the simulator as upstream; a tenant creates jobs through the gateway and never polls them.
// The trackers find each end (completed, failed, cancelled by the tenant's DELETE, expired) and a real
// receiver on a socket gets each event, signed per Standard Webhooks (checked with the `standardwebhooks`
// verifier), its body carrying the record exactly as the upstream wrote it (a 19-digit seed keeps its
// digits). The receiver is down at first: every event arrives once it is back, each with the webhook-id
// of its first attempt. A delivery that dies is redelivered through the tenant route, from the other
// replica; another tenant's id is 404. A replica SIGKILLed with attempts in flight and deliveries pending
// loses none: the other one delivers every event, with the same ids. A secret file replaced under both
// replicas: their deliveries verify with the old secret and with the new one during the overlap.
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';
import type { ServerResponse } from 'node:http';
import {
  startReceiver,
  verifiesWith,
  type Answer,
  type ReceivedRequest,
  type Receiver,
} from './support/receiver.ts';
import { SECRET_A, SECRET_B } from './support/service-harness.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
// Beyond 2^53: a parse and re-serialisation of the record would write 9223372036854776000.
const SEED = '9223372036854775807';
const RFC_3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
// Two gateway processes and a tracker's schedule on a loaded two-core machine.
const EVENTS_TIMEOUT_MS = 60_000;
const KEYS = { app: canaryTenantKey(), other: canaryTenantKey() };

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis.stop();
});

interface Fleet {
  simulator: SimulatorServer;
  receiver: Receiver;
  replicas: GatewayProcess[];
  /** Starts one more replica on the same configuration. */
  startReplica(): Promise<GatewayProcess>;
  stop(): Promise<void>;
}

/**
 * The simulator, a receiver answering with `answer`, and `replicas` replicas (two by default) on the shared
 * Redis (under their own key prefix) whose tenant `app` has one webhook to the receiver for every event;
 * `other` has none.
 */
async function startFleet(options: {
  keyPrefix: string;
  retry: string;
  answer: Answer;
  timeoutMs?: number;
  replicas?: number;
  /** The webhook's `secret:` (flow style); $APP_WEBHOOK_SECRET by default. */
  secret?: string;
}): Promise<Fleet> {
  const simulator = await startSharedTokenSimulator({
    queuedMs: 0,
    processingMs: 0,
    requestsPerMinute: 1_000_000,
  });
  const receiver = await startReceiver('127.0.0.1', options.answer);
  const tenant = (id: keyof typeof KEYS) => [
    `  - id: ${id}`,
    '    credential: shared',
    `    keys: [{ sha256: "${KEYS[id].sha256}", prefix: "${KEYS[id].prefix}" }]`,
  ];
  const configPath = await writeTempConfig(
    [
      // Load shedding off: this machine's load is not what the test is about.
      'server: { host: 127.0.0.1, port: 0, overload: { maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxRssRatio: 1, maxQueueWaitMs: 0 } }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `upstream: { baseUrl: "${simulator.url}", credentials: { shared: { env: SHARED_TOKEN } } }`,
      `store: { kind: redis, redis: { url: "${redis.url}", keyPrefix: "${options.keyPrefix}", commandTimeoutMs: 2000 } }`,
      'jobs: { leaseMs: 1500, firstPollMs: 50, maxPollIntervalMs: 200, maxPollsPerSecondPerCredential: 200, maxAgeSeconds: 4 }',
      `webhooks: { allowedDestinations: ["127.0.0.1/32"], allowHttp: ["127.0.0.1/32"], timeoutMs: ${options.timeoutMs ?? 2000}, retry: ${options.retry} }`,
      'tenants:',
      ...tenant('app'),
      `    webhooks: [{ id: done, url: "${receiver.origin}/hooks/gengate", secret: ${options.secret ?? '{ env: APP_WEBHOOK_SECRET }'}, events: [job.completed, job.failed, job.cancelled, job.expired] }]`,
      ...tenant('other'),
      '',
    ].join('\n'),
  );
  const env = { SHARED_TOKEN: TOKEN, APP_WEBHOOK_SECRET: SECRET_A };
  const replicas: GatewayProcess[] = [];
  const fleet: Fleet = {
    simulator,
    receiver,
    replicas,
    async startReplica() {
      const replica = await startGatewayProcess(configPath, env);
      replicas.push(replica);
      return replica;
    },
    async stop() {
      for (const replica of replicas) {
        replica.signal('SIGTERM');
        await replica.exited;
      }
      await Promise.all([simulator.close(), receiver.close()]);
    },
  };
  // One after the other (a loaded machine starts each sooner alone); what started is stopped if one fails.
  try {
    for (let index = 0; index < (options.replicas ?? 2); index += 1) await fleet.startReplica();
  } catch (error) {
    await fleet.stop();
    throw error;
  }
  return fleet;
}

function call(
  replica: GatewayProcess,
  tenant: keyof typeof KEYS,
  method: string,
  path: string,
  body?: string,
) {
  return fetch(`${replica.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${KEYS[tenant].key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
}

async function create(replica: GatewayProcess, route: 'images' | 'videos', body: string): Promise<string> {
  const response = await call(replica, 'app', 'POST', `/v1/${route}/generations`, body);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { requestId: string } }).data.requestId;
}

/** The record as the upstream answers it now: a finished job's record no longer changes. */
async function upstreamRecord(simulator: SimulatorServer, route: 'images' | 'videos', requestId: string) {
  const response = await fetch(`${simulator.url}/v1/${route}/generations/${requestId}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(response.status).toBe(200);
  return response.text();
}

interface Payload {
  type: string;
  timestamp: string;
  data: { tenant: string; requestId: string; route: string };
}

/** The body the contract describes, with the record's text spliced in as the upstream wrote it. */
function expectedBody(payload: Payload, event: string, requestId: string, route: string, record: string) {
  const head = JSON.stringify({
    type: event,
    timestamp: payload.timestamp,
    data: { tenant: 'app', requestId, route },
  });
  return `${head.slice(0, -2)},"record":${record}}}`;
}

interface DeliveryView {
  id: string;
  webhookId: string;
  event: string;
  requestId: string;
  attempts: number;
  lastStatus: number | string | null;
  nextAttemptAt: string | null;
  dead: boolean;
}

async function deliveriesOf(replica: GatewayProcess, tenant: keyof typeof KEYS): Promise<DeliveryView[]> {
  const response = await call(replica, tenant, 'GET', '/v1/gateway/webhook-deliveries');
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: DeliveryView[] }).data;
}

describe('every way a job ends reaches the tenant’s receiver, which was down at first', () => {
  let fleet: Fleet;
  let down = true;
  beforeAll(async () => {
    fleet = await startFleet({
      keyPrefix: 'ends:',
      retry: '{ firstDelayMs: 100, maxDelayMs: 400, giveUpAfterSeconds: 600 }',
      answer: (_request, response) => {
        response.writeHead(down ? 503 : 204).end();
      },
    });
  }, 60_000);
  afterAll(async () => {
    // Unset when the fleet could not start (startFleet stopped what it had started).
    await (fleet as Fleet | undefined)?.stop();
  });

  it('completed, failed, cancelled and expired: signed events with the upstream’s record, same id on every attempt', async () => {
    const [first, second] = fleet.replicas as [GatewayProcess, GatewayProcess];
    const { simulator, receiver } = fleet;
    const completed = await create(first, 'images', `{"seed": ${SEED}}`);
    simulator.faults.set({ failJob: true, times: 1 });
    const failed = await create(second, 'images', '{}');
    simulator.faults.set({ stallJob: true, times: 1 });
    const cancelled = await create(first, 'videos', `{"duration": 5, "seed": ${SEED}}`);
    const cancel = await call(second, 'app', 'DELETE', `/v1/videos/generations/${cancelled}`);
    expect(cancel.status).toBe(200);
    simulator.faults.set({ stallJob: true, times: 1 });
    const expired = await create(second, 'images', '{}');
    const ends = [
      { requestId: completed, event: 'job.completed', route: 'images' },
      { requestId: failed, event: 'job.failed', route: 'images' },
      { requestId: cancelled, event: 'job.cancelled', route: 'videos' },
      { requestId: expired, event: 'job.expired', route: 'images' },
    ] as const;

    const payloadOf = (request: ReceivedRequest) => JSON.parse(request.body) as Payload;
    const requestsAbout = (requestId: string) =>
      receiver.requests.filter((request) => payloadOf(request).data.requestId === requestId);
    await waitFor(
      'an attempt at every event while the receiver is down',
      () => ends.every(({ requestId }) => requestsAbout(requestId).length >= 1),
      EVENTS_TIMEOUT_MS,
    );
    const attemptsWhileDown = receiver.requests.length;
    down = false;
    await waitFor(
      'every event delivered once the receiver is back',
      async () => {
        const listed = await deliveriesOf(second, 'app');
        return listed.length === ends.length && listed.every((delivery) => delivery.lastStatus === 204);
      },
      EVENTS_TIMEOUT_MS,
    );
    expect(receiver.requests.length).toBeGreaterThan(attemptsWhileDown);

    for (const { requestId, event, route } of ends) {
      const received = requestsAbout(requestId);
      // The first attempt (answered 503) and at least one more once the receiver was back.
      expect(received.length).toBeGreaterThanOrEqual(2);
      const ids = new Set(received.map((request) => request.headers['webhook-id']));
      expect(ids.size).toBe(1);
      const record = event === 'job.expired' ? 'null' : await upstreamRecord(simulator, route, requestId);
      for (const request of received) {
        expect(request.url).toBe('/hooks/gengate');
        expect(request.headers['content-type']).toBe('application/json');
        expect(verifiesWith(SECRET_A, request)).toBe(true);
        const payload = payloadOf(request);
        expect(payload.timestamp).toMatch(RFC_3339_UTC);
        expect(request.body).toBe(expectedBody(payload, event, requestId, `${route}.create`, record));
      }
    }
    // The upstream's own digits, not a double's.
    for (const requestId of [completed, cancelled]) {
      expect(requestsAbout(requestId)[0]?.body).toContain(`"seed":${SEED}`);
    }
    expect(JSON.parse(await upstreamRecord(simulator, 'images', failed))).toMatchObject({
      data: { status: 'failed' },
    });

    const listed = await deliveriesOf(first, 'app');
    expect(
      listed
        .map(({ event, requestId }) => ({ event, requestId }))
        .sort((a, b) => a.event.localeCompare(b.event)),
    ).toEqual(
      ends
        .map(({ event, requestId }) => ({ event, requestId }))
        .sort((a, b) => a.event.localeCompare(b.event)),
    );
    for (const delivery of listed) {
      const received = requestsAbout(delivery.requestId);
      expect(delivery).toEqual({
        id: received[0]?.headers['webhook-id'],
        webhookId: 'done',
        event: delivery.event,
        requestId: delivery.requestId,
        attempts: received.length,
        lastStatus: 204,
        nextAttemptAt: null,
        dead: false,
      });
    }
    expect(await deliveriesOf(first, 'other')).toEqual([]);
    // The secret signs; it is never written to a log line.
    for (const replica of fleet.replicas) {
      expect(JSON.stringify(replica.lines)).not.toContain(SECRET_A.slice('whsec_'.length));
    }
  }, 120_000);
});

describe('a dead delivery is redelivered through the tenant route', () => {
  let fleet: Fleet;
  let status = 500;
  beforeAll(async () => {
    fleet = await startFleet({
      keyPrefix: 'replay:',
      retry: '{ firstDelayMs: 100, maxDelayMs: 200, giveUpAfterSeconds: 1 }',
      answer: (_request, response) => {
        response.writeHead(status).end();
      },
    });
  }, 60_000);
  afterAll(async () => {
    // Unset when the fleet could not start (startFleet stopped what it had started).
    await (fleet as Fleet | undefined)?.stop();
  });

  it('from the other replica, with the same webhook-id; another tenant’s id is 404 delivery_not_found', async () => {
    const [first, second] = fleet.replicas as [GatewayProcess, GatewayProcess];
    const { receiver } = fleet;
    const requestId = await create(first, 'images', '{}');
    await waitFor(
      'the delivery to be dead',
      async () => (await deliveriesOf(second, 'app'))[0]?.dead === true,
      EVENTS_TIMEOUT_MS,
    );
    const [dead] = await deliveriesOf(second, 'app');
    const id = dead?.id ?? '';
    expect(dead).toEqual({
      id,
      webhookId: 'done',
      event: 'job.completed',
      requestId,
      attempts: receiver.requests.length,
      lastStatus: 500,
      nextAttemptAt: null,
      dead: true,
    });
    expect(new Set(receiver.requests.map((request) => request.headers['webhook-id']))).toEqual(new Set([id]));

    const redeliver = (replica: GatewayProcess, tenant: keyof typeof KEYS) =>
      call(replica, tenant, 'POST', `/v1/gateway/webhook-deliveries/${id}/redeliver`);
    const stolen = await redeliver(first, 'other');
    expect(stolen.status).toBe(404);
    expect(await stolen.json()).toEqual({
      status: 404,
      error: {
        code: 'delivery_not_found',
        type: 'not_found_error',
        message: `webhook delivery ${id} was not found`,
      },
    });
    expect(await deliveriesOf(second, 'other')).toEqual([]);

    status = 204;
    const before = receiver.requests.length;
    const replayed = await redeliver(first, 'app');
    expect(replayed.status).toBe(202);
    expect(await replayed.json()).toEqual({ status: 202, data: { id, queued: true } });
    await waitFor('the redelivery', () => receiver.requests.length >= before + 1, EVENTS_TIMEOUT_MS);
    const redelivered = receiver.requests.at(-1) as ReceivedRequest;
    expect(redelivered.headers['webhook-id']).toBe(id);
    expect(verifiesWith(SECRET_A, redelivered)).toBe(true);
    expect(redelivered.body).toBe(receiver.requests[0]?.body);
    await waitFor(
      'the list to show it delivered',
      async () => (await deliveriesOf(second, 'app'))[0]?.lastStatus === 204,
      EVENTS_TIMEOUT_MS,
    );
    expect((await deliveriesOf(second, 'app'))[0]).toMatchObject({ id, dead: false, attempts: before + 1 });
  }, 120_000);
});

describe('a replica SIGKILLed while deliveries are in flight and pending', () => {
  let fleet: Fleet;
  let hanging = true;
  const held: ServerResponse[] = [];
  beforeAll(async () => {
    fleet = await startFleet({
      keyPrefix: 'kill:',
      retry: '{ firstDelayMs: 100, maxDelayMs: 400, giveUpAfterSeconds: 600 }',
      // Longer than the test: an attempt held at the receiver is in flight until the receiver lets go.
      timeoutMs: 300_000,
      replicas: 1,
      answer: (_request, response) => {
        if (hanging) held.push(response);
        else response.writeHead(204).end();
      },
    });
  }, 60_000);
  afterAll(async () => {
    // Unset when the fleet could not start (startFleet stopped what it had started).
    await (fleet as Fleet | undefined)?.stop();
  });

  it('the other replica delivers every event, each with the id of its first attempt', async () => {
    const { receiver } = fleet;
    const [doomed] = fleet.replicas as [GatewayProcess];
    const requestIds: string[] = [];
    for (let index = 0; index < 6; index += 1) requestIds.push(await create(doomed, 'images', '{}'));
    // Four attempts in flight (the destination's share, concurrencyPerDestination), two pending.
    await waitFor('four attempts in flight', () => receiver.requests.length === 4, EVENTS_TIMEOUT_MS);
    const inFlightIds = receiver.requests.map((request) => String(request.headers['webhook-id']));
    const survivor = await fleet.startReplica();
    doomed.signal('SIGKILL');
    await doomed.exited;
    hanging = false;
    for (const response of held.splice(0)) response.writeHead(204).end();

    // The attempts the dead replica held are taken over once its lock lapses (30 s).
    await waitFor(
      'every event delivered by the survivor',
      async () => {
        const listed = await deliveriesOf(survivor, 'app');
        return listed.length === requestIds.length && listed.every((delivery) => delivery.lastStatus === 204);
      },
      120_000,
    );
    const listed = await deliveriesOf(survivor, 'app');
    expect(listed.map((delivery) => delivery.requestId).sort()).toEqual([...requestIds].sort());
    const idOf = new Map(listed.map((delivery) => [delivery.requestId, delivery.id]));
    for (const request of receiver.requests) {
      const { requestId } = (JSON.parse(request.body) as Payload).data;
      expect(request.headers['webhook-id']).toBe(idOf.get(requestId));
      expect(verifiesWith(SECRET_A, request)).toBe(true);
    }
    expect([...idOf.values()]).toEqual(expect.arrayContaining(inFlightIds));
  }, 240_000);
});

describe('a secret rotated by file under both replicas', () => {
  let fleet: Fleet;
  let folder: string;
  let file: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-webhook-secret-'));
    file = join(folder, 'secret');
    await writeFile(file, `${SECRET_A}\n`);
    fleet = await startFleet({
      keyPrefix: 'rotate:',
      retry: '{ firstDelayMs: 100, maxDelayMs: 400, giveUpAfterSeconds: 600 }',
      answer: (_request, response) => {
        response.writeHead(204).end();
      },
      secret: `{ file: "${file}" }`,
    });
  }, 60_000);
  afterAll(async () => {
    // Unset when the fleet could not start (startFleet stopped what it had started).
    await (fleet as Fleet | undefined)?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  it('deliveries verify with the old secret before the change, and with either during the overlap', async () => {
    const { receiver, replicas } = fleet;
    const [first, second] = replicas as [GatewayProcess, GatewayProcess];
    await create(first, 'images', '{}');
    // At least: a 204 late past the 2 s timeout brings a retry of the same event.
    await waitFor('the first delivery', () => receiver.requests.length >= 1, EVENTS_TIMEOUT_MS);
    const before = receiver.requests[0] as ReceivedRequest;
    expect([verifiesWith(SECRET_A, before), verifiesWith(SECRET_B, before)]).toEqual([true, false]);

    // Replaced whole, as an editor or a Kubernetes secret mount does.
    await writeFile(`${file}.next`, `${SECRET_B}\n`);
    await rename(`${file}.next`, file);
    await waitFor(
      'both replicas to read the new secret',
      () => replicas.every((replica) => replica.lines.some((line) => line.msg === 'webhook secret reloaded')),
      EVENTS_TIMEOUT_MS,
    );
    await create(first, 'images', '{}');
    await create(second, 'images', '{}');
    const eventsDelivered = () =>
      new Set(receiver.requests.map((request) => request.headers['webhook-id'])).size;
    await waitFor('two more deliveries', () => eventsDelivered() === 3, EVENTS_TIMEOUT_MS);
    for (const during of receiver.requests.slice(1)) {
      expect([verifiesWith(SECRET_A, during), verifiesWith(SECRET_B, during)]).toEqual([true, true]);
    }
    for (const replica of replicas) {
      const logged = JSON.stringify(replica.lines);
      for (const secret of [SECRET_A, SECRET_B]) expect(logged).not.toContain(secret.slice('whsec_'.length));
    }
  }, 120_000);
});

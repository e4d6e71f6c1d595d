// Starts what a gateway test needs, all real and on loopback: the upstream simulator on a port of its
// own, and a gateway built by buildApp with three tenants (alpha and gamma share the upstream credential
// `shared`), listening on port 0. Logs are captured. The keys and tokens are the secret canary's
// (secret-canary.ts): everything the gateway logs at any level, writes to its sockets and exposes as
// metrics is searched for them, and every request the upstream receives must carry the tenant's upstream
// token and never a tenant key.
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { buildApp } from '../../src/app.ts';
import { createTenantDirectory } from '../../src/auth/tenant-directory.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.ts';
import { startTenantCountersAtZero } from '../../src/gateway/tenant-series.ts';
import type { RateLimiter } from '../../src/ratelimit/types.ts';
import { startSimulator } from '../../src/simulator/server.ts';
import { openStore, storeJobOptions } from '../../src/store/open-store.ts';
import { createUpstreamClient, upstreamClientOptions } from '../../src/upstream/client.ts';
import type { ReceivedRequest } from '../../src/simulator/record.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';
import {
  CANARY_UPSTREAM_TOKENS,
  canaryTenantKey,
  currentTestName,
  recordCanaryFinding,
  searchForTenantKeys,
  searchProduced,
  streamSearch,
} from './secret-canary.ts';

export const UPSTREAM_TOKENS = CANARY_UPSTREAM_TOKENS;

export interface GatewayHarness {
  url: string;
  app: FastifyInstance;
  simulator: Awaited<ReturnType<typeof startSimulator>>;
  metrics: GatewayMetrics;
  limiter: RateLimiter;
  keys: { alpha: string; beta: string; gamma: string; expired: string };
  logLines: string[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  upstreamTimeoutMs?: number;
  bodyLimitBytes?: number;
  simulatorRequestsPerMinute?: number;
  /** How long the simulator keeps each job processing; 0 (every job ends at once) by default. */
  simulatorProcessingMs?: number;
  /** YAML for the alpha tenant's `limits:` list (flow style), e.g. `[{ id: r, routes: ['*'], cost: requests, limit: 2, windowSeconds: 60 }]`. */
  alphaLimitsYaml?: string;
  /** The `store:` mapping (flow style); memory by default. */
  storeYaml?: string;
  /**
   * server.overload, as YAML. Off by default: the harness's gateway shares its event loop with the
   * simulator and the test itself, whose own work (parsing megabyte bodies) would read as overload (a
   * sample interval in which the loop never turned counts as an infinite delay).
   */
  overloadYaml?: string;
  /** YAML for the alpha tenant's `policy:` mapping (flow style). */
  alphaPolicyYaml?: string;
  /** Failed authentications allowed per client address and minute. */
  authFailureLimit?: number;
  /** `server.requestTimeoutMs`; the configuration's default when absent. */
  requestTimeoutMs?: number;
  /** `server.maxBytesInFlight`; the configuration's default when absent. */
  maxBytesInFlight?: number;
  /**
   * A server put between the gateway and the simulator (test/support/misbehaving-upstream.ts): started
   * with the simulator's URL, it is the gateway's upstream, and is closed with the harness.
   */
  inFrontOfUpstream?: (simulatorUrl: string) => Promise<{ url: string; close(): Promise<void> }>;
}

export async function startGatewayHarness(options: HarnessOptions = {}): Promise<GatewayHarness> {
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: Object.entries(UPSTREAM_TOKENS).map(([name, token]) => ({ name, token })),
    queuedMs: 0,
    processingMs: options.simulatorProcessingMs ?? 0,
    ...(options.simulatorRequestsPerMinute === undefined
      ? {}
      : { requestsPerMinute: options.simulatorRequestsPerMinute }),
  });
  const inFront = await options.inFrontOfUpstream?.(simulator.url);
  const alpha = canaryTenantKey();
  const beta = canaryTenantKey();
  const gamma = canaryTenantKey();
  const expired = canaryTenantKey();
  const yaml = `
server:
  host: 127.0.0.1
  port: 0
  bodyLimitBytes: ${options.bodyLimitBytes ?? 10485760}
  authenticationFailures: { limit: ${options.authFailureLimit ?? 1000}, windowSeconds: 60 }
  overload: ${options.overloadYaml ?? '{ maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxQueueWaitMs: 0 }'}
${options.requestTimeoutMs === undefined ? '' : `  requestTimeoutMs: ${options.requestTimeoutMs}`}
${options.maxBytesInFlight === undefined ? '' : `  maxBytesInFlight: ${options.maxBytesInFlight}`}
upstream:
  baseUrl: ${inFront?.url ?? simulator.url}
  timeoutMs: ${options.upstreamTimeoutMs ?? 5000}
  credentials:
    shared: { env: SHARED_TOKEN }
    research: { env: RESEARCH_TOKEN }
store: ${options.storeYaml ?? '{ kind: memory }'}
# The job tracker's first poll an hour after a create: the upstream sees only what tests send
# (test/jobs/ follows jobs with configurations of its own).
jobs: { firstPollMs: 3600000, maxPollIntervalMs: 3600000 }
tenants:
  - id: alpha
    credential: shared
    keys:
      - { sha256: "${alpha.sha256}", prefix: "${alpha.prefix}", label: ci }
      - { sha256: "${expired.sha256}", prefix: "${expired.prefix}", label: old, expiresAt: "2020-01-01T00:00:00Z" }
    limits: ${options.alphaLimitsYaml ?? '[]'}
    policy: ${options.alphaPolicyYaml ?? '{}'}
  - id: beta
    credential: research
    account: passthrough
    keys:
      - { sha256: "${beta.sha256}", prefix: "${beta.prefix}" }
  - id: gamma
    credential: shared
    keys:
      - { sha256: "${gamma.sha256}", prefix: "${gamma.prefix}" }
`;
  const config = await parseConfigText(yaml, {
    env: { SHARED_TOKEN: UPSTREAM_TOKENS.shared, RESEARCH_TOKEN: UPSTREAM_TOKENS.research },
    baseDir: process.cwd(),
  });
  const logLines: string[] = [];
  // Tests read the lines at info and above; the canary searches every line, trace included.
  const logger = pino(
    { level: 'trace' },
    pino.multistream([
      { level: 'info', stream: linesInto(logLines) },
      {
        level: 'trace',
        stream: {
          write: (line: string) => {
            searchProduced('a log line', line);
          },
        },
      },
    ]),
  );
  const metrics = createMetrics();
  const upstream = createUpstreamClient(upstreamClientOptions(config, metrics));
  const tenants = createTenantDirectory(config.tenants);
  const store = await openStore(config.store, { logger, metrics, jobs: storeJobOptions(config) });
  startTenantCountersAtZero(config.tenants, { metrics, store });
  const app = buildApp(config, {
    logger,
    tenants: () => tenants,
    credentials: { get: (name) => UPSTREAM_TOKENS[name as keyof typeof UPSTREAM_TOKENS] },
    metrics,
    upstream,
    store,
  });
  app.server.on('connection', searchWhatIsWritten);
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const checkUpstreamRequests = checkEachUpstreamRequest(simulator.received);
  return {
    url,
    app,
    simulator: {
      ...simulator,
      clearReceived() {
        checkUpstreamRequests();
        simulator.clearReceived();
      },
    },
    metrics,
    limiter: store.limiter,
    keys: { alpha: alpha.key, beta: beta.key, gamma: gamma.key, expired: expired.key },
    logLines,
    async close() {
      searchProduced('the metrics', await metrics.registry.metrics());
      await app.close();
      await upstream.close();
      await store.close();
      await inFront?.close();
      await simulator.close();
      checkUpstreamRequests();
    },
  };
}

function linesInto(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
}

/** Every byte the gateway writes to a client's socket: heads, bodies, and answers to malformed HTTP. */
function searchWhatIsWritten(socket: Socket): void {
  const search = streamSearch(`what the gateway wrote to a client (port ${socket.remotePort ?? '?'})`);
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  const end = socket.end.bind(socket) as (...args: unknown[]) => Socket;
  const searchData = (data: unknown) => {
    if (typeof data === 'string' || data instanceof Uint8Array) search(data);
  };
  socket.write = (...args: unknown[]) => {
    searchData(args[0]);
    return write(...args);
  };
  socket.end = (...args: unknown[]) => {
    searchData(args[0]);
    return end(...args);
  };
}

/**
 * Checks the requests the upstream received since the last check: each carries one of the upstream tokens
 * and no tenant key, in its target, its headers or its body. The body is read after the request arrived,
 * so the check runs when the record is about to be emptied and when the harness closes; each finding names
 * the test during which the request arrived.
 */
function checkEachUpstreamRequest(received: ReceivedRequest[]): () => void {
  const arrivedDuring = new WeakMap<ReceivedRequest, string>();
  const push = received.push.bind(received);
  // Not enumerable: tests compare the record with arrays.
  Object.defineProperty(received, 'push', {
    value: (...entries: ReceivedRequest[]) => {
      for (const entry of entries) arrivedDuring.set(entry, currentTestName());
      return push(...entries);
    },
  });
  const tokens = new Set(Object.values(CANARY_UPSTREAM_TOKENS).map((token) => `Bearer ${token}`));
  return () => {
    for (const entry of received) {
      const during = arrivedDuring.get(entry) ?? currentTestName();
      const source = `the request the upstream received: ${entry.method} ${entry.url}`;
      if (!tokens.has(String(entry.headers.authorization))) {
        recordCanaryFinding({
          what: 'no upstream token in its Authorization',
          source,
          during,
          excerpt: String(entry.headers.authorization),
        });
      }
      searchForTenantKeys(source, `${entry.url}\n${JSON.stringify(entry.headers)}`, during);
      searchForTenantKeys(source, entry.body, during);
    }
  };
}

/**
 * What the upstream should have received for a create the client sent without a requestId: the very
 * bytes sent, with the id the gateway assigned spliced in before the closing brace (docs/ownership.md#creates).
 * A null requestId is replaced in place, with the spaces around it; a body that carried a requestId is
 * expected unchanged.
 */
export function sentWithAssignedRequestId(
  harness: GatewayHarness,
  sent: string | Uint8Array,
  index = 0,
): Buffer {
  const sentBytes = Buffer.from(sent);
  const parsed = JSON.parse(sentBytes.toString('utf8')) as Record<string, unknown>;
  if (typeof parsed.requestId === 'string') return sentBytes;
  const received = harness.simulator.received[index]?.body ?? Buffer.alloc(0);
  const assigned = (JSON.parse(received.toString('utf8')) as { requestId?: unknown }).requestId;
  if (
    typeof assigned !== 'string' ||
    !/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(assigned)
  ) {
    throw new Error('the upstream received no assigned UUID v4 requestId');
  }
  if ('requestId' in parsed) {
    const replaced = sentBytes.toString('utf8').replace(/("requestId"\s*:)\s*null\s*/, `$1"${assigned}"`);
    return Buffer.from(replaced);
  }
  const end = sentBytes.lastIndexOf(0x7d);
  const separator = Object.keys(parsed).length === 0 ? '' : ',';
  return Buffer.concat([
    sentBytes.subarray(0, end),
    Buffer.from(`${separator}"requestId":"${assigned}"`),
    sentBytes.subarray(end),
  ]);
}

/**
 * One harness for the whole test file: started before its first test, closed after its last, with the
 * simulator's record and faults emptied before each test. The returned object stands for the harness
 * once it has started.
 */
export function useGatewayHarness(options: HarnessOptions = {}): GatewayHarness {
  let started: GatewayHarness | undefined;
  beforeAll(async () => {
    started = await startGatewayHarness(options);
  });
  afterAll(async () => {
    await started?.close();
  });
  beforeEach(() => {
    started?.simulator.clearReceived();
    started?.simulator.faults.clear();
  });
  return new Proxy({} as GatewayHarness, {
    get(_target, property) {
      if (started === undefined) throw new Error('the harness is used outside a test');
      return Reflect.get(started, property) as unknown;
    },
  });
}

export interface GatewayOnRedisOptions extends Omit<HarnessOptions, 'storeYaml'> {
  /** Arguments for redis-server, e.g. `['--enable-debug-command', 'yes']` for DEBUG SLEEP. */
  redisArgs?: string[];
  /** The `store:` mapping (flow style), given the URL of the test's own Redis. */
  storeYaml: (redisUrl: string) => string;
}

export interface GatewayOnRedis {
  redis: RedisServer;
  harness: GatewayHarness;
}

/**
 * For tests that break the store: returns a function that starts, inside a test, a Redis of its own
 * and a harness gateway whose store it is. Both are stopped after that test, whatever it did to them.
 */
export function useGatewayOnRedisPerTest(): (options: GatewayOnRedisOptions) => Promise<GatewayOnRedis> {
  let redis: RedisServer | undefined;
  let harness: GatewayHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    await redis?.stop();
    harness = undefined;
    redis = undefined;
  });
  return async ({ redisArgs = [], storeYaml, ...harnessOptions }) => {
    const started = await startRedisServer(redisArgs);
    redis = started;
    harness = await startGatewayHarness({ ...harnessOptions, storeYaml: storeYaml(started.url) });
    return { redis: started, harness };
  };
}

export interface MetricsScraper {
  /** GET /metrics on the gateway's admin server, as Prometheus reads it. */
  scrape(): Promise<{ statusCode: number; body: string }>;
}

/**
 * The admin server of a harness gateway (from useGatewayHarness), built before the file's tests and
 * closed after them, for reading the gateway's metrics the way Prometheus does.
 */
export function useMetricsScraper(harness: GatewayHarness): MetricsScraper {
  let admin: FastifyInstance | undefined;
  beforeAll(() => {
    admin = buildAdminApp({
      logger: pino({ level: 'silent' }),
      metrics: harness.metrics,
      readiness: createReadiness(),
    });
  });
  afterAll(async () => {
    await admin?.close();
  });
  return {
    async scrape() {
      if (admin === undefined) throw new Error('the admin server is used outside a test');
      return admin.inject({ method: 'GET', url: '/metrics' });
    },
  };
}

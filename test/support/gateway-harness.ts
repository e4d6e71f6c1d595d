// Starts what a gateway test needs, all real and on loopback: the upstream simulator on a port of its
// own, and a gateway built by buildApp with three tenants (alpha and gamma share the upstream credential
// `shared`), listening on port 0. Logs are captured.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { createTenantDirectory } from '../../src/auth/tenant-directory.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.ts';
import { startTenantCountersAtZero } from '../../src/observability/tenant-series.ts';
import type { RateLimiter } from '../../src/ratelimit/types.ts';
import { startSimulator } from '../../src/simulator/server.ts';
import { openStore } from '../../src/store/from-config.ts';
import { createUpstreamClient, upstreamClientOptions } from '../../src/upstream/client.ts';

export const UPSTREAM_TOKENS = {
  shared: 'upstream_shared_0f4e9c2b7a61d385',
  research: 'upstream_research_5b8d1e7c3f29a604',
};

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
  /** YAML for the alpha tenant's `limits:` list (flow style), e.g. `[{ id: r, routes: ['*'], cost: requests, limit: 2, windowSeconds: 60 }]`. */
  alphaLimitsYaml?: string;
  /** The `store:` mapping (flow style); memory by default. */
  storeYaml?: string;
  /** server.overload, as YAML. */
  overloadYaml?: string;
  /** YAML for the alpha tenant's `policy:` mapping (flow style). */
  alphaPolicyYaml?: string;
  /** Failed authentications allowed per client address and minute. */
  authFailureLimit?: number;
}

export async function startGatewayHarness(options: HarnessOptions = {}): Promise<GatewayHarness> {
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: Object.entries(UPSTREAM_TOKENS).map(([name, token]) => ({ name, token })),
    queuedMs: 0,
    processingMs: 0,
    ...(options.simulatorRequestsPerMinute === undefined
      ? {}
      : { requestsPerMinute: options.simulatorRequestsPerMinute }),
  });
  const alpha = generateTenantKey();
  const beta = generateTenantKey();
  const gamma = generateTenantKey();
  const expired = generateTenantKey();
  const yaml = `
server:
  host: 127.0.0.1
  port: 0
  bodyLimitBytes: ${options.bodyLimitBytes ?? 10485760}
  authenticationFailures: { limit: ${options.authFailureLimit ?? 1000}, windowSeconds: 60 }
  overload: ${options.overloadYaml ?? '{}'}
upstream:
  baseUrl: ${simulator.url}
  timeoutMs: ${options.upstreamTimeoutMs ?? 5000}
  credentials:
    shared: { env: SHARED_TOKEN }
    research: { env: RESEARCH_TOKEN }
store: ${options.storeYaml ?? '{ kind: memory }'}
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
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString('utf8'));
        callback();
      },
    }),
  );
  const metrics = createMetrics();
  const upstream = createUpstreamClient(upstreamClientOptions(config, metrics));
  const tenants = createTenantDirectory(config.tenants);
  const store = await openStore(config.store, { logger, metrics });
  startTenantCountersAtZero(config.tenants, { metrics, store });
  const app = buildApp(config, {
    logger,
    tenants: () => tenants,
    credentials: { get: (name) => UPSTREAM_TOKENS[name as keyof typeof UPSTREAM_TOKENS] },
    metrics,
    upstream,
    usage: store.usage,
    limiter: store.limiter,
    ownership: store.ownership,
    admission: store.admission,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    app,
    simulator,
    metrics,
    limiter: store.limiter,
    keys: { alpha: alpha.key, beta: beta.key, gamma: gamma.key, expired: expired.key },
    logLines,
    async close() {
      await app.close();
      await upstream.close();
      await store.close();
      await simulator.close();
      // Every suite that uses the harness also proves that no key or token reached its logs.
      const logged = logLines.join('');
      const secrets = [alpha.key, beta.key, gamma.key, expired.key, ...Object.values(UPSTREAM_TOKENS)];
      if (secrets.some((secret) => logged.includes(secret))) throw new Error('a key or token was logged');
    },
  };
}

/**
 * What the upstream should have received for a create the client sent without a requestId: the very
 * bytes sent, with the id the gateway assigned spliced in before the closing brace (contract section 7).
 * A null requestId is replaced in place (the body is then serialised anew); a body that carried a
 * requestId is expected unchanged.
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
  if ('requestId' in parsed) return Buffer.from(JSON.stringify({ ...parsed, requestId: assigned }));
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

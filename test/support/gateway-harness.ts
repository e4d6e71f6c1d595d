// Starts what a gateway test needs, all real and on loopback: the upstream simulator on a port of its
// own, and a gateway built by buildApp with two tenants, listening on port 0. Logs are captured.
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { generateTenantKey } from '../../src/auth/keys.ts';
import { createTenantDirectory } from '../../src/auth/tenant-directory.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.ts';
import type { RateLimiter } from '../../src/ratelimit/types.ts';
import { startSimulator } from '../../src/simulator/server.ts';
import { openStore } from '../../src/store/from-config.ts';
import { createUpstreamClient } from '../../src/upstream/client.ts';

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
  keys: { alpha: string; beta: string; expired: string };
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
  const expired = generateTenantKey();
  const yaml = `
server:
  host: 127.0.0.1
  port: 0
  bodyLimitBytes: ${options.bodyLimitBytes ?? 10485760}
  authenticationFailures: { limit: ${options.authFailureLimit ?? 1000}, windowSeconds: 60 }
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
  const upstream = createUpstreamClient({ baseUrl: simulator.url, timeoutMs: config.upstream.timeoutMs });
  const tenants = createTenantDirectory(config.tenants);
  const store = await openStore(config.store, { logger, registry: metrics.registry });
  const app = buildApp(config, {
    logger,
    tenants: () => tenants,
    credentials: { get: (name) => UPSTREAM_TOKENS[name as keyof typeof UPSTREAM_TOKENS] },
    metrics,
    upstream,
    usage: store.usage,
    limiter: store.limiter,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    app,
    simulator,
    metrics,
    limiter: store.limiter,
    keys: { alpha: alpha.key, beta: beta.key, expired: expired.key },
    logLines,
    async close() {
      await app.close();
      await upstream.close();
      await store.close();
      await simulator.close();
    },
  };
}

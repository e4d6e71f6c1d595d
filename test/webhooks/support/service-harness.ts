// Opens the webhook service the way the gateway does, on the memory store or a real Redis, with the
// retry schedule shortened and a secret per webhook from the environment it is given.
import { Registry } from 'prom-client';
import type { GatewayConfig, TenantConfig } from '../../../src/config/schema.ts';
import type { JobEnd } from '../../../src/jobs/job-ends.ts';
import { openWebhookQueue } from '../../../src/store/webhook-queue.ts';
import type { SecretLogger } from '../../../src/webhooks/secrets.ts';
import { openWebhookService, type WebhookService } from '../../../src/webhooks/service.ts';

export const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const SECRET_B = 'whsec_dGVzdC1zZWNyZXQtYi0xMjM0NTY3ODkwYWJjZA==';

export interface TestWebhook {
  id: string;
  url: string;
  events?: TenantConfig['webhooks'][number]['events'];
  secret?: TenantConfig['webhooks'][number]['secret'];
}

export function tenantWith(id: string, webhooks: TestWebhook[]): TenantConfig {
  return {
    id,
    credential: 'shared',
    keys: [],
    account: 'gateway',
    policy: { mode: 'enforce' },
    limits: [],
    webhooks: webhooks.map((webhook) => ({
      id: webhook.id,
      url: webhook.url,
      secret: webhook.secret ?? { env: 'SECRET_A' },
      events: webhook.events ?? ['job.completed', 'job.failed', 'job.cancelled', 'job.expired'],
    })),
  };
}

export function webhookSettings(
  overrides: Partial<GatewayConfig['webhooks']> = {},
): GatewayConfig['webhooks'] {
  return {
    allowedDestinations: ['127.0.0.1/32'],
    allowHttp: ['127.0.0.1/32'],
    timeoutMs: 2_000,
    retry: { firstDelayMs: 100, maxDelayMs: 400, giveUpAfterSeconds: 60 },
    concurrencyPerDestination: 4,
    secretOverlapSeconds: 60,
    ...overrides,
  };
}

export function storeOf(
  redisUrl: string | undefined,
  redisNodes?: { host: string; port: number }[],
): GatewayConfig['store'] {
  return {
    kind: redisUrl === undefined && redisNodes === undefined ? 'memory' : 'redis',
    redis: {
      url: redisUrl ?? 'redis://127.0.0.1:1/0',
      ...(redisNodes === undefined ? {} : { nodes: redisNodes }),
      keyPrefix: 'gengate-test:',
      commandTimeoutMs: 100,
    },
    failMode: 'open',
    replicas: 1,
    ownershipTtlSeconds: 3600,
  };
}

export async function openTestService(options: {
  redisUrl?: string;
  /** Seed nodes of a Redis Cluster, instead of redisUrl. */
  redisNodes?: { host: string; port: number }[];
  tenants: TenantConfig[];
  webhooks?: Partial<GatewayConfig['webhooks']>;
  baseDir?: string;
  lockDurationMs?: number;
  work?: boolean;
  registry?: Registry;
  logger?: SecretLogger;
}): Promise<WebhookService> {
  return openWebhookService({
    webhooks: webhookSettings(options.webhooks),
    openQueue: (step) =>
      openWebhookQueue(storeOf(options.redisUrl, options.redisNodes), step, {
        ...(options.lockDurationMs === undefined ? {} : { lockDurationMs: options.lockDurationMs }),
        ...(options.work === undefined ? {} : { work: options.work }),
      }),
    tenants: options.tenants,
    registry: options.registry ?? new Registry(),
    env: { SECRET_A, SECRET_B },
    baseDir: options.baseDir ?? process.cwd(),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
}

// A record as the upstream writes it, with numbers a parse and re-serialisation would change.
export function completedRecord(requestId: string): string {
  return `{"status": 200, "data": {"id": "${requestId}", "status": "completed", "totalCost": 0.0040000000000000001, "seed": 12345678901234567890, "results": [{"cost": 1e-3, "url": "https://cdn.example/x.png"}]}}`;
}

export function settlement(
  tenant: string,
  requestId: string,
  outcome: JobEnd['outcome'] = 'completed',
): JobEnd {
  return {
    tenant,
    requestId,
    route: 'images.create',
    credential: 'shared',
    outcome,
    record: outcome === 'expired' ? null : completedRecord(requestId),
    endedAt: new Date('2026-11-26T18:00:00.000Z'),
  };
}
